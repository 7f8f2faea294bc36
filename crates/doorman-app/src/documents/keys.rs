//! Admin API keys, never with their secret but once, when made; and the console's one-time
//! sign-in links made for them.

use chrono::{DateTime, Utc};
use doorman_domain::KeySummary;
use doorman_domain::usecases::operator::keys::SIGN_IN_LINK_LIFETIME;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::schema::{KnownFormat, Object, ObjectBuilder, SchemaFormat, Type};
use uuid::Uuid;

/// An admin API key, as `keys list --json` shows it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KeyDoc {
    pub id: Uuid,
    pub name: String,
    /// The one tenant it sees; `null`: every tenant.
    pub tenant_id: Option<Uuid>,
    /// It reads, never changes anything.
    pub read_only: bool,
    /// It may read the payloads tenants keep, in event documents (a key scoped to a tenant, its
    /// tenant's; a read-only one only while its tenant lets its read-only portals read them).
    pub read_payloads: bool,
    pub created_at: DateTime<Utc>,
    /// From then on it authenticates nothing; `null`: it does not expire.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it last authenticated a request (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl KeyDoc {
    /// Its state in words at `now`, by the one rule of a key's life
    /// ([`doorman_domain::KeyRefusal::of_key`]): `revoked`, `expired` or `active`.
    pub fn state_at(&self, now: DateTime<Utc>) -> &'static str {
        match doorman_domain::KeyRefusal::of_key(self.revoked_at, self.expires_at, now) {
            Some(doorman_domain::KeyRefusal::Revoked) => "revoked",
            Some(_) => "expired",
            None => "active",
        }
    }
}

impl From<KeySummary> for KeyDoc {
    fn from(k: KeySummary) -> Self {
        Self {
            id: *k.id.as_uuid(),
            name: k.name,
            tenant_id: k.scope.tenant.map(|t| *t.as_uuid()),
            read_only: k.scope.read_only,
            read_payloads: k.scope.read_payloads,
            created_at: k.created_at,
            expires_at: k.expires_at,
            last_used_at: k.last_used_at,
            revoked_at: k.revoked_at,
        }
    }
}

/// A key just made: what it is, and the key itself, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NewKeyDoc {
    #[serde(flatten)]
    pub key_doc: KeyDoc,
    /// `dmk_…`: send it as `Authorization: Bearer …`. Shown once; only its hash is stored.
    pub key: String,
}

impl NewKeyDoc {
    pub fn new(made: KeySummary, secret: &doorman_domain::KeySecret) -> Self {
        Self { key_doc: KeyDoc::from(made), key: secret.expose().to_owned() }
    }
}

/// A one-time sign-in link to the operator console, for a key scoped to one tenant: shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignInLinkDoc {
    /// The key the session will act as (revoking it ends the session).
    pub key_id: Uuid,
    /// The one tenant the session sees.
    pub tenant_id: Uuid,
    /// Whether the session may only read.
    pub read_only: bool,
    /// `/console/sign-in/<token>`: good for one sign-in; only its hash is stored.
    #[schema(example = "/console/sign-in/3q2-7wAAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo")]
    pub path: String,
    /// The whole link to send the customer: `DOORMAN_CONSOLE_URL` followed by `path`.
    #[schema(example = "https://admin.example/console/sign-in/3q2-7wAAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo")]
    pub url: String,
    /// After this it signs nobody in ([`sign_in_link_lifetime`] after it was made; the
    /// document's description is made by `expiry_schema`).
    #[schema(schema_with = expiry_schema)]
    pub expires_at: DateTime<Utc>,
}

/// How long a sign-in link lasts, in words (`… minutes`): every text that says it (the API's,
/// the command line's, the console's) is made from [`SIGN_IN_LINK_LIFETIME`], never restated.
pub fn sign_in_link_lifetime() -> String {
    match SIGN_IN_LINK_LIFETIME.num_minutes() {
        1 => "1 minute".to_owned(),
        minutes => format!("{minutes} minutes"),
    }
}

/// `expires_at`'s schema: a date and time, described with the link's lifetime.
fn expiry_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some(format!(
            "After this it signs nobody in ({} after it was made).",
            sign_in_link_lifetime()
        )))
        .build()
}

impl From<&doorman_domain::usecases::operator::keys::SignInLink> for SignInLinkDoc {
    fn from(link: &doorman_domain::usecases::operator::keys::SignInLink) -> Self {
        Self {
            key_id: *link.key.id.as_uuid(),
            tenant_id: link.key.scope.tenant.map(|t| *t.as_uuid()).unwrap_or_default(),
            read_only: link.key.scope.read_only,
            path: link.path(),
            url: link.url.clone(),
            expires_at: link.expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifetime_in_words_is_the_whole_lifetime() {
        let words = sign_in_link_lifetime();
        let minutes: i64 = words.split(' ').next().unwrap().parse().unwrap();
        assert_eq!(chrono::TimeDelta::minutes(minutes), SIGN_IN_LINK_LIFETIME, "{words}");
    }

    /// The console's keys page and `keys list` say what the API would do with the key: the
    /// domain's rule, so a key expiring at this very instant already reads expired.
    #[test]
    fn a_keys_state_in_words_is_the_domains_rule() {
        let now = Utc::now();
        let key = |revoked_at, expires_at| KeyDoc {
            id: Uuid::nil(),
            name: "k".into(),
            tenant_id: None,
            read_only: false,
            read_payloads: false,
            created_at: now,
            expires_at,
            last_used_at: None,
            revoked_at,
        };
        let second = chrono::Duration::seconds(1);
        assert_eq!(key(None, None).state_at(now), "active");
        assert_eq!(key(None, Some(now + second)).state_at(now), "active");
        assert_eq!(key(None, Some(now)).state_at(now), "expired");
        assert_eq!(key(Some(now), Some(now - second)).state_at(now), "revoked");
    }
}

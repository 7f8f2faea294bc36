//! Who is asking: an admin API key or the command line, and what each may do.
//!
//! The rules of access live here, once, for both faces: a key scoped to one tenant sees only
//! that tenant (another tenant is *not found*, so existence is not revealed), a read-only key
//! changes nothing, only a key for every tenant creates tenants, and only a key given
//! `read_payloads` reads the events' kept payloads (customers' messages; a read-only portal's
//! only while its tenant allows it). The command line, run by whoever holds the database
//! owner's password, may do everything.

use std::fmt;

use uuid::Uuid;

use super::ValidationError;
use super::text::check_printable_ascii;
use super::{PayloadHidden, TenantId, TenantRecord};

super::ids::uuid_id!(
    /// An admin API key's id: public, printed by `keys list`, recorded in the audit trail.
    KeyId,
    "key id"
);

/// A key's name, for people: 1 to 255 bytes, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName(String);

impl KeyName {
    pub const MAX_CHARS: usize = 255;

    /// 1 to 255 characters as given (what the API's schema bounds), no control characters;
    /// trimmed.
    pub fn new(name: impl Into<String>) -> Result<Self, ValidationError> {
        let name = name.into();
        if name.chars().count() > Self::MAX_CHARS {
            return Err(ValidationError::new("key name", "is longer than 255 characters"));
        }
        // As given, before trimming: a newline or tab at either end is a control character
        // too, which the API's schema refuses anywhere in the name.
        if name.chars().any(char::is_control) {
            return Err(ValidationError::new("key name", "contains a control character"));
        }
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err(ValidationError::new("key name", "is empty"));
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a key may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyScope {
    /// `Some`: this tenant only. `None`: every tenant.
    pub tenant: Option<TenantId>,
    /// Reads only: every change is forbidden.
    pub read_only: bool,
    /// It may read the payloads tenants keep (what their customers wrote in Slack), off
    /// unless asked for: seeing what became of an event does not need its content.
    pub read_payloads: bool,
}

impl KeyScope {
    /// Whether a key of this scope reads `tenant`'s kept payloads, or why not: the one rule,
    /// for both faces. A key for every tenant needs `read_payloads`. A key scoped to one tenant
    /// (a customer's portal) needs it too, for its own tenant only; a read-only one (a portal
    /// handed out to look, not to act) reads them only while its tenant allows its read-only
    /// portals to ([`TenantRecord::read_only_portals_read_payloads`], off by default), and is
    /// told so otherwise ([`PayloadHidden::NotAllowedByTenant`]).
    pub fn payload_access(&self, tenant: &TenantRecord) -> Result<(), PayloadHidden> {
        if !self.read_payloads {
            return Err(PayloadHidden::NotAllowed);
        }
        match self.tenant {
            None => Ok(()),
            Some(own) if own != tenant.id => Err(PayloadHidden::NotAllowed),
            Some(_) if self.read_only && !tenant.read_only_portals_read_payloads => {
                Err(PayloadHidden::NotAllowedByTenant)
            }
            Some(_) => Ok(()),
        }
    }
}

/// An admin API key as it authenticated: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: KeyId,
    pub name: String,
    pub scope: KeyScope,
}

/// A key's secret text (`dmk_…`), shown once when the key is created. Never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySecret(String);

impl KeySecret {
    pub fn new(secret: String) -> Self {
        Self(secret)
    }

    /// The secret itself, for the one place that shows it to the operator who made it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeySecret(<redacted>)")
    }
}

/// A key as `keys list` shows it: never its secret or hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySummary {
    pub id: KeyId,
    pub name: String,
    pub scope: KeyScope,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// From then on it authenticates nothing; `None`: it does not expire.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// When it last authenticated a request (recorded at most once a minute).
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl KeySummary {
    /// Why the key authenticates nothing at `now` (revoked, or expired), or `None` when it
    /// still does: what work done later on its behalf (a replay job's events) is held to.
    pub fn refusal_at(&self, now: chrono::DateTime<chrono::Utc>) -> Option<KeyRefusal> {
        KeyRefusal::of_key(self.revoked_at, self.expires_at, now)
    }
}

/// Why a presented key authenticated nothing: for metrics and the log line, never for the
/// answer (every refusal is the same 401, so a caller learns nothing about other keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyRefusal {
    /// No `Authorization: Bearer …` header.
    Missing,
    /// Not `dmk_<32 hex>_<secret>`.
    Malformed,
    /// No key has that id.
    Unknown,
    /// The id exists; the secret is not its.
    WrongSecret,
    Revoked,
    Expired,
}

impl KeyRefusal {
    /// A key's life, the one statement of it: a key revoked (at any time) or whose expiry is
    /// `now` or past authenticates nothing. Every check of a key goes through here: a bearer
    /// key, a console session's key and a sign-in link's key (the adapter passes the
    /// database's `now()`, read in the statement that read the key), and a replay job's
    /// requester ([`KeySummary::refusal_at`], at the use case's clock).
    pub fn of_key(
        revoked_at: Option<chrono::DateTime<chrono::Utc>>,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<Self> {
        if revoked_at.is_some() {
            Some(Self::Revoked)
        } else if expires_at.is_some_and(|at| at <= now) {
            Some(Self::Expired)
        } else {
            None
        }
    }

    pub const ALL: [Self; 6] =
        [Self::Missing, Self::Malformed, Self::Unknown, Self::WrongSecret, Self::Revoked, Self::Expired];

    /// The metric label and log word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Malformed => "malformed",
            Self::Unknown => "unknown_key",
            Self::WrongSecret => "wrong_secret",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
        }
    }
}

/// Who is acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// An admin API key (the platform's backend, its support tools).
    Key(ApiKey),
    /// The command line, run by this OS user as the database owner: every tenant, every change.
    Cli { user: String },
}

impl Actor {
    /// Whether `tenant` exists as far as this actor can tell. A tenant it may not see must be
    /// answered exactly like one that does not exist.
    pub fn may_see(&self, tenant: TenantId) -> bool {
        match self {
            Actor::Key(key) => key.scope.tenant.is_none_or(|own| own == tenant),
            Actor::Cli { .. } => true,
        }
    }

    /// Whether this actor may change anything at all.
    pub fn may_write(&self) -> bool {
        match self {
            Actor::Key(key) => !key.scope.read_only,
            Actor::Cli { .. } => true,
        }
    }

    /// Whether this actor reads `tenant`'s kept payloads, or why not
    /// ([`KeyScope::payload_access`]). The command line, as the tables' owner, could read
    /// them anyway.
    pub fn payload_access(&self, tenant: &TenantRecord) -> Result<(), PayloadHidden> {
        match self {
            Actor::Key(key) => key.scope.payload_access(tenant),
            Actor::Cli { .. } => Ok(()),
        }
    }

    /// Only an actor for every tenant creates tenants (and may write).
    pub fn may_create_tenants(&self) -> bool {
        self.may_write() && self.only_tenant().is_none()
    }

    /// Only an actor that may do everything (the command line, or a key for every tenant that
    /// is not read-only) manages keys: no key can make one more powerful than itself.
    pub fn may_manage_keys(&self) -> bool {
        self.may_create_tenants()
    }

    /// The one tenant a scoped key sees; `None` for an actor that sees every tenant.
    pub fn only_tenant(&self) -> Option<TenantId> {
        match self {
            Actor::Key(key) => key.scope.tenant,
            Actor::Cli { .. } => None,
        }
    }

    /// Whose idempotency keys these are: a key's own, or the command line user's.
    pub fn idempotency_scope(&self) -> String {
        match self {
            Actor::Key(key) => format!("key:{}", key.id),
            Actor::Cli { user } => format!("cli:{user}"),
        }
    }
}

/// The id of one request (HTTP: `X-Request-Id` or a fresh one; CLI: one per command), so an
/// audit row can be matched with logs. Printable ASCII, 1 to 128 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    pub const MAX_LEN: usize = 128;

    pub fn new(id: impl Into<String>) -> Result<Self, ValidationError> {
        let id = id.into();
        check_printable_ascii("request id", &id)?;
        if id.len() > Self::MAX_LEN {
            return Err(ValidationError::new("request id", "is longer than 128 bytes"));
        }
        Ok(Self(id))
    }

    pub fn generate() -> Self {
        Self(Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who is asking, and in which request: what every operator use case is called with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub actor: Actor,
    pub request: RequestId,
}

impl Caller {
    /// A caller as the audit trail recorded it (kind, id, name, request), for work done later
    /// on its behalf (a replay job's events). A key's scope is not recorded: it is given as
    /// `tenant`, the one the work is for, read-write (what the job was allowed when made).
    pub fn recorded(kind: &str, id: &str, name: &str, request: &str, tenant: TenantId) -> Option<Self> {
        let actor = match kind {
            "key" => Actor::Key(ApiKey {
                id: id.parse().ok()?,
                name: name.to_owned(),
                // Its payload permission is not needed for a replay: the job sends the kept
                // payload to the agent, never shows it.
                scope: KeyScope { tenant: Some(tenant), read_only: false, read_payloads: false },
            }),
            "cli" => Actor::Cli { user: id.to_owned() },
            _ => return None,
        };
        Some(Self { actor, request: RequestId::new(request).ok()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tenant: Option<TenantId>, read_only: bool) -> Actor {
        let scope = KeyScope { tenant, read_only, read_payloads: false };
        Actor::Key(ApiKey { id: KeyId::generate(), name: "k".into(), scope })
    }

    fn reader_of_payloads(tenant: Option<TenantId>, read_only: bool) -> Actor {
        let scope = KeyScope { tenant, read_only, read_payloads: true };
        Actor::Key(ApiKey { id: KeyId::generate(), name: "k".into(), scope })
    }

    /// A tenant that lets its read-only portals read its payloads, or not.
    fn tenant(id: TenantId, allows_read_only_portals: bool) -> TenantRecord {
        TenantRecord {
            id,
            name: "Acme".into(),
            created_at: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            retain_payloads: true,
            redelivery: None,
            read_only_portals_read_payloads: allows_read_only_portals,
        }
    }

    #[test]
    fn a_key_for_every_tenant_reads_payloads_only_when_given_read_payloads_read_only_or_not() {
        for allows in [false, true] {
            let tenant = tenant(TenantId::generate(), allows);
            let not_allowed = Err(PayloadHidden::NotAllowed);
            assert_eq!(key(None, false).payload_access(&tenant), not_allowed, "off by default");
            assert_eq!(key(None, true).payload_access(&tenant), not_allowed);
            assert_eq!(reader_of_payloads(None, false).payload_access(&tenant), Ok(()));
            assert_eq!(
                reader_of_payloads(None, true).payload_access(&tenant),
                Ok(()),
                "support reads, changes nothing"
            );
            assert_eq!(Actor::Cli { user: "ops".into() }.payload_access(&tenant), Ok(()));
        }
    }

    #[test]
    fn a_writing_portal_key_reads_its_own_tenants_payloads_with_read_payloads_whatever_the_tenant_allows() {
        let (own, other) = (TenantId::generate(), TenantId::generate());
        for allows in [false, true] {
            let (mine, theirs) = (tenant(own, allows), tenant(other, true));
            assert_eq!(reader_of_payloads(Some(own), false).payload_access(&mine), Ok(()));
            assert_eq!(
                reader_of_payloads(Some(own), false).payload_access(&theirs),
                Err(PayloadHidden::NotAllowed),
                "another tenant's: never"
            );
            assert_eq!(
                key(Some(own), false).payload_access(&mine),
                Err(PayloadHidden::NotAllowed),
                "not given it"
            );
        }
    }

    #[test]
    fn a_read_only_portal_key_with_read_payloads_reads_them_only_while_its_tenant_allows() {
        let (own, other) = (TenantId::generate(), TenantId::generate());
        let portal = reader_of_payloads(Some(own), true);
        assert_eq!(portal.payload_access(&tenant(own, false)), Err(PayloadHidden::NotAllowedByTenant));
        assert_eq!(portal.payload_access(&tenant(own, true)), Ok(()));
        assert_eq!(
            portal.payload_access(&tenant(other, true)),
            Err(PayloadHidden::NotAllowed),
            "another tenant's, whatever that one allows: never"
        );
        // Without read_payloads it is the key that may not, whatever the tenant allows.
        for allows in [false, true] {
            assert_eq!(
                key(Some(own), true).payload_access(&tenant(own, allows)),
                Err(PayloadHidden::NotAllowed)
            );
        }
    }

    #[test]
    fn a_scoped_key_sees_only_its_tenant_and_never_creates_tenants() {
        let (own, other) = (TenantId::generate(), TenantId::generate());
        let scoped = key(Some(own), false);
        assert!(scoped.may_see(own) && !scoped.may_see(other));
        assert!(scoped.may_write());
        assert!(!scoped.may_create_tenants());
        assert_eq!(scoped.only_tenant(), Some(own));
    }

    #[test]
    fn a_read_only_key_writes_nothing_and_an_unscoped_one_creates_tenants() {
        let read_only = key(None, true);
        assert!(read_only.may_see(TenantId::generate()));
        assert!(!read_only.may_write() && !read_only.may_create_tenants());
        assert!(key(None, false).may_create_tenants());
        assert!(Actor::Cli { user: "ops".into() }.may_create_tenants());
    }

    #[test]
    fn a_key_is_refused_once_revoked_or_from_its_expiry_on() {
        let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let key = KeySummary {
            id: KeyId::generate(),
            name: "k".into(),
            scope: KeyScope { tenant: None, read_only: false, read_payloads: false },
            created_at: now,
            expires_at: None,
            last_used_at: None,
            revoked_at: None,
        };
        assert_eq!(key.refusal_at(now), None);
        let later = chrono::Duration::seconds(1);
        assert_eq!(KeySummary { expires_at: Some(now + later), ..key.clone() }.refusal_at(now), None);
        assert_eq!(
            KeySummary { expires_at: Some(now), ..key.clone() }.refusal_at(now),
            Some(KeyRefusal::Expired)
        );
        assert_eq!(KeySummary { revoked_at: Some(now), ..key }.refusal_at(now), Some(KeyRefusal::Revoked));
    }

    #[test]
    fn a_key_name_with_a_control_character_anywhere_is_refused_even_where_trimming_would_drop_it() {
        for name in ["c\n", "\tc", "a\u{7f}b", "c\r\n"] {
            assert!(KeyName::new(name).is_err(), "{name:?} was taken");
        }
        assert_eq!(KeyName::new("  c  ").unwrap().as_str(), "c");
    }

    #[test]
    fn a_key_name_is_trimmed_and_its_secret_shows_only_when_asked() {
        assert_eq!(KeyName::new("  backend ").unwrap().as_str(), "backend");
        let secret = KeySecret::new("dmk_s3cr3t".into());
        assert_eq!(secret.expose(), "dmk_s3cr3t");
        assert_eq!(format!("{secret:?}"), "KeySecret(<redacted>)");
    }

    #[test]
    fn a_request_id_is_bounded_printable_ascii() {
        assert_eq!(RequestId::new("req-1").unwrap().to_string(), "req-1");
        assert!(RequestId::new("req-1").is_ok());
        assert!(RequestId::new("").is_err());
        assert!(RequestId::new("a\nb").is_err());
        assert!(RequestId::new("x".repeat(129)).is_err());
    }
}

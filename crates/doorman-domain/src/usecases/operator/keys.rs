//! Admin API keys: made, listed (never their secrets) and revoked by an actor that may do
//! everything: the command line, or over HTTP a key for every tenant that is not read-only.
//! A scoped or read-only key never mints, sees or revokes keys.

use chrono::{DateTime, Utc};

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{AuditAction, AuditEntry, Caller, KeyId, KeyName, KeyScope, KeySecret, KeySummary};
use crate::ports::{AdminKeys, Clock, OperatorPorts};

/// What a new key's audit target ends with when it may read payloads.
pub const READS_PAYLOADS: &str = " (reads payloads)";

/// How long a console sign-in link may wait for its one use.
pub const SIGN_IN_LINK_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::minutes(15);

/// A console sign-in link as made: the key it signs in as, its token (shown once), the whole
/// link, and when it stops working.
#[derive(Debug, Clone)]
pub struct SignInLink {
    pub key: KeySummary,
    pub token: KeySecret,
    /// `{console_base_url}/console/sign-in/{token}`: it holds the token, shown once too.
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

impl SignInLink {
    /// `/console/sign-in/{token}`: the link's path.
    pub fn path(&self) -> String {
        sign_in_path(&self.token)
    }
}

fn sign_in_path(token: &KeySecret) -> String {
    format!("/console/sign-in/{}", token.expose())
}

impl<P: OperatorPorts> Operator<P> {
    /// A new key: what it is, and its secret to be shown once. A key scoped to a tenant needs
    /// the tenant to exist; an expiry must be in the future. Any key may be given
    /// `read_payloads` (a read-only portal's reads them only while its tenant allows it:
    /// [`KeyScope::payload_access`]). Its audit entry's target is its id and name, and says
    /// when it reads payloads: who may read customers' messages is on the trail.
    pub async fn create_key(
        &self,
        caller: &Caller,
        name: KeyName,
        scope: KeyScope,
        expires_at: Option<DateTime<Utc>>,
    ) -> Result<(KeySummary, KeySecret), OperatorError> {
        self.may_manage_keys(caller)?;
        let now = self.ports.clock().now();
        if expires_at.is_some_and(|at| at <= now) {
            return Err(OperatorError::Refused { what: "expires_at", reason: "is not in the future".into() });
        }
        if let Some(tenant) = scope.tenant {
            self.visible(caller, tenant).await?;
        }
        let id = KeyId::generate();
        let reads = if scope.read_payloads { READS_PAYLOADS } else { "" };
        let audit = AuditEntry::new(
            caller,
            AuditAction::KeyCreate,
            scope.tenant,
            Some(format!("{id} {}{reads}", name.as_str())),
        );
        let secret = self.ports.keys().create(id, &name, scope, expires_at, &audit).await?;
        let summary = KeySummary {
            id,
            name: name.as_str().to_owned(),
            scope,
            created_at: now,
            expires_at,
            last_used_at: None,
            revoked_at: None,
        };
        Ok((summary, secret))
    }

    /// Every key, revoked ones included: never a secret.
    pub async fn keys(&self, caller: &Caller) -> Result<Vec<KeySummary>, OperatorError> {
        self.may_manage_keys(caller)?;
        Ok(self.ports.keys().list().await?)
    }

    /// One key.
    pub async fn key(&self, caller: &Caller, id: KeyId) -> Result<KeySummary, OperatorError> {
        self.may_manage_keys(caller)?;
        self.ports
            .keys()
            .get(id)
            .await?
            .ok_or_else(|| OperatorError::NotFound { what: "key", id: id.to_string() })
    }

    /// Revokes a key: its next request, to any admin process, is refused. A key may revoke
    /// itself (the last thing it does). A scoped key's revocation is audited under its tenant,
    /// so it is in that tenant's trail (and its customer's audit page) like the key's creation.
    pub async fn revoke_key(&self, caller: &Caller, id: KeyId) -> Result<(), OperatorError> {
        let key = self.key(caller, id).await?;
        let audit = AuditEntry::new(caller, AuditAction::KeyRevoke, key.scope.tenant, Some(id.to_string()));
        if self.ports.keys().revoke(id, &audit).await? {
            Ok(())
        } else {
            Err(OperatorError::NotFound { what: "key", id: id.to_string() })
        }
    }

    /// A one-time sign-in link to the operator console for a key scoped to one tenant (a
    /// customer's portal): its token, shown once, good for one sign-in within
    /// [`SIGN_IN_LINK_LIFETIME`]. The session it opens acts as the key, so revoking the key
    /// ends it. A key for every tenant gets no link: whoever holds one signs in with it. Without
    /// the console's address no link is made (nothing is written).
    pub async fn create_sign_in_link(&self, caller: &Caller, id: KeyId) -> Result<SignInLink, OperatorError> {
        let key = self.key(caller, id).await?;
        if key.revoked_at.is_some() {
            return Err(OperatorError::NotFound { what: "key", id: id.to_string() });
        }
        let Some(tenant) = key.scope.tenant else {
            return Err(OperatorError::Refused {
                what: "key",
                reason: "sign-in links are for keys scoped to one tenant".into(),
            });
        };
        let Some(base) = &self.settings.console_base_url else { return Err(OperatorError::SignInLinksOff) };
        let expires_at = self.ports.clock().now() + SIGN_IN_LINK_LIFETIME;
        let audit =
            AuditEntry::new(caller, AuditAction::SignInLinkCreate, Some(tenant), Some(id.to_string()));
        match self.ports.keys().sign_in_link(id, expires_at, &audit).await? {
            Some(token) => {
                let url = format!("{}{}", base.trim_end_matches('/'), sign_in_path(&token));
                Ok(SignInLink { key, token, url, expires_at })
            }
            None => Err(OperatorError::NotFound { what: "key", id: id.to_string() }),
        }
    }

    /// Whether sign-in links can be made (the console's address is known).
    pub fn sign_in_links_on(&self) -> bool {
        self.settings.console_base_url.is_some()
    }

    fn may_manage_keys(&self, caller: &Caller) -> Result<(), OperatorError> {
        if caller.actor.may_manage_keys() {
            Ok(())
        } else {
            Err(OperatorError::Forbidden("only a key for every tenant, and not read-only, manages keys"))
        }
    }
}

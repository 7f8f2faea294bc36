//! Admin API keys: made and revoked from the command line (a key cannot mint keys), listed
//! without their secrets.

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{AuditAction, AuditEntry, Caller, KeyId, KeyName, KeyScope, KeySecret, KeySummary};
use crate::ports::{AdminKeys, OperatorPorts};

impl<P: OperatorPorts> Operator<P> {
    /// A new key: its id, and its secret to be shown once. A key scoped to a tenant needs the
    /// tenant to exist.
    pub async fn create_key(
        &self,
        caller: &Caller,
        name: KeyName,
        scope: KeyScope,
    ) -> Result<(KeyId, KeySecret), OperatorError> {
        self.may_manage_keys(caller)?;
        if let Some(tenant) = scope.tenant {
            self.visible(caller, tenant).await?;
        }
        let id = KeyId::generate();
        let audit = AuditEntry::new(
            caller,
            AuditAction::KeyCreate,
            scope.tenant,
            Some(format!("{id} {}", name.as_str())),
        );
        let secret = self.ports.keys().create(id, &name, scope, &audit).await?;
        Ok((id, secret))
    }

    /// Every key, revoked ones included: never a secret.
    pub async fn keys(&self, caller: &Caller) -> Result<Vec<KeySummary>, OperatorError> {
        self.may_manage_keys(caller)?;
        Ok(self.ports.keys().list().await?)
    }

    /// Revokes a key: its next request, to any admin process, is refused.
    pub async fn revoke_key(&self, caller: &Caller, id: KeyId) -> Result<(), OperatorError> {
        self.may_manage_keys(caller)?;
        let audit = AuditEntry::new(caller, AuditAction::KeyRevoke, None, Some(id.to_string()));
        if self.ports.keys().revoke(id, &audit).await? {
            Ok(())
        } else {
            Err(OperatorError::NotFound { what: "key", id: id.to_string() })
        }
    }

    /// Keys are the command line's to manage: an API key never mints or revokes one.
    fn may_manage_keys(&self, caller: &Caller) -> Result<(), OperatorError> {
        match caller.actor {
            crate::model::Actor::Cli { .. } => Ok(()),
            crate::model::Actor::Key(_) => {
                Err(OperatorError::Forbidden("keys are managed from the command line"))
            }
        }
    }
}

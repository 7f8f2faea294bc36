//! Reading the audit trail.

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{AuditCursor, AuditFilter, AuditRecord, Caller, Page, PageRequest, TenantId};
use crate::ports::{AuditTrail, OperatorPorts, Tenants};

impl<P: OperatorPorts> Operator<P> {
    /// Audit entries, newest first: of one tenant, or all of them. A key scoped to a tenant
    /// reads that tenant's entries only, whatever it asks for. A deleted tenant's entries stay
    /// readable, by name, to a caller for every tenant: what happened to an offboarded
    /// customer is what the trail is kept for. `filter` narrows it further; one whose `until`
    /// is before its `since` is refused before anything is read.
    pub async fn audit(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
        filter: &AuditFilter,
        page: &PageRequest<AuditCursor>,
    ) -> Result<Page<AuditRecord, AuditCursor>, OperatorError> {
        filter.check()?;
        let only = match (tenant, caller.actor.only_tenant()) {
            (Some(asked), None) if self.ports.tenants().get(asked).await?.is_none() => {
                if !self.ports.tenants().was_deleted(asked).await? {
                    return Err(OperatorError::UnknownTenant(asked));
                }
                Some(asked)
            }
            _ => self.scoped(caller, tenant).await?,
        };
        Ok(self.ports.audit().list(only, filter, page).await?)
    }
}

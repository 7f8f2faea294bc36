//! Reading the audit trail.

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{AuditCursor, AuditRecord, Caller, Page, PageRequest, TenantId};
use crate::ports::{AuditTrail, OperatorPorts};

impl<P: OperatorPorts> Operator<P> {
    /// Audit entries, newest first: of one tenant, or all of them. A key scoped to a tenant
    /// reads that tenant's entries only, whatever it asks for.
    pub async fn audit(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
        page: &PageRequest<AuditCursor>,
    ) -> Result<Page<AuditRecord, AuditCursor>, OperatorError> {
        Ok(self.ports.audit().list(self.scoped(caller, tenant).await?, page).await?)
    }
}

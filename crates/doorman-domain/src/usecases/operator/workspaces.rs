//! Which workspaces a tenant's deliveries come from. Slack is the one platform.

use super::{Operator, entry, named_by};
use crate::errors::OperatorError;
use crate::model::{
    AuditAction, Caller, Linked, LinkedWorkspace, Platform, TenantId, WorkspaceId, WorkspaceRef,
};
use crate::ports::{OperatorPorts, Workspaces};

/// A workspace linked by an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedNow {
    pub link: LinkedWorkspace,
    /// False when the tenant already had it (nothing changed).
    pub new: bool,
}

impl<P: OperatorPorts> Operator<P> {
    /// The tenant's workspace links, oldest first.
    pub async fn workspaces(
        &self,
        caller: &Caller,
        tenant: TenantId,
    ) -> Result<Vec<LinkedWorkspace>, OperatorError> {
        self.visible(caller, tenant).await?;
        Ok(self.ports.workspaces().list(tenant).await?)
    }

    /// Links a team (optionally inside an enterprise) or, with only an enterprise, an org-wide
    /// install ([`WorkspaceRef::operator`]). Linking one the tenant has changes nothing; one
    /// another tenant has is refused.
    pub async fn link_workspace(
        &self,
        caller: &Caller,
        tenant: TenantId,
        team: Option<WorkspaceId>,
        enterprise: Option<WorkspaceId>,
    ) -> Result<LinkedNow, OperatorError> {
        self.writable(caller, tenant).await?;
        let workspace = WorkspaceRef::operator(team, enterprise)?;
        let audit = entry(caller, AuditAction::WorkspaceLink, tenant, workspace.to_string());
        match self.ports.workspaces().link(tenant, Platform::Slack, &workspace, &audit).await? {
            Linked::New(link) => Ok(LinkedNow { link, new: true }),
            Linked::Already(link) => Ok(LinkedNow { link, new: false }),
            Linked::Taken => Err(OperatorError::WorkspaceTaken),
        }
    }

    /// Removes the tenant's link of the workspace `id` names (a team id, or an org-wide
    /// install's enterprise id), and the app's installation there if there is one: nothing
    /// would resolve to it any more.
    pub async fn unlink_workspace(
        &self,
        caller: &Caller,
        tenant: TenantId,
        id: &WorkspaceId,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let links = self.ports.workspaces().list(tenant).await?;
        let link = named_by(links, id, "workspace", |link| &link.workspace)?;
        let audit = entry(caller, AuditAction::WorkspaceUnlink, tenant, link.workspace.to_string());
        let removed = self.ports.workspaces().remove(tenant, link.platform, &link.workspace, &audit).await?;
        if !removed.link {
            // Removed meanwhile by someone else: as absent as if it had never been there.
            return Err(OperatorError::NotFound { what: "workspace", id: id.to_string() });
        }
        Ok(())
    }
}

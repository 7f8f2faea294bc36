//! Which workspaces a tenant's deliveries come from. Slack is the one platform.

use super::{Operator, entry, named_by};
use crate::errors::OperatorError;
use crate::model::{
    AuditAction, Caller, Linked, LinkedWorkspace, Platform, TenantId, ValidationError, WorkspaceId,
    WorkspaceRef,
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
    /// install ([`WorkspaceRef::operator`]), named by Slack's ids (`T…`, `E…`). Linking one the
    /// tenant has the same way changes nothing; one it has otherwise (another enterprise) is
    /// refused, and so is one another tenant has. A key scoped to a tenant never links by id:
    /// its workspaces come through an install link, where Slack proves they are the
    /// customer's (an id typed in proves nothing, and a refusal would tell which ids others
    /// hold).
    pub async fn link_workspace(
        &self,
        caller: &Caller,
        tenant: TenantId,
        team: Option<WorkspaceId>,
        enterprise: Option<WorkspaceId>,
    ) -> Result<LinkedNow, OperatorError> {
        self.writable(caller, tenant).await?;
        if caller.actor.only_tenant().is_some() {
            return Err(OperatorError::Forbidden(
                "a key scoped to a tenant links workspaces through an install link (POST …/install-links), where Slack proves the workspace is the customer's",
            ));
        }
        if let Some(team) = &team {
            slack_id("team_id", 'T', team)?;
        }
        if let Some(enterprise) = &enterprise {
            slack_id("enterprise_id", 'E', enterprise)?;
        }
        let workspace = WorkspaceRef::operator(team, enterprise)?;
        let audit = entry(caller, AuditAction::WorkspaceLink, tenant, workspace.to_string());
        match self.ports.workspaces().link(tenant, Platform::Slack, &workspace, &audit).await? {
            Linked::New(link) => Ok(LinkedNow { link, new: true }),
            Linked::Already(link) if link.workspace != workspace => {
                Err(OperatorError::LinkedOtherwise(link.workspace.to_string()))
            }
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

/// Slack's form of a team (`T…`) or enterprise (`E…`) id: the letter, then upper-case letters
/// and digits. An operator's typo (a lower-case id, an enterprise id given as a team) would
/// otherwise be linked and match nothing Slack ever sends.
fn slack_id(what: &'static str, letter: char, id: &WorkspaceId) -> Result<(), ValidationError> {
    let mut chars = id.as_str().chars();
    let well_formed = chars.next() == Some(letter)
        && id.as_str().len() <= 32
        && chars.clone().next().is_some()
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if well_formed {
        Ok(())
    } else {
        Err(ValidationError::new(
            what,
            if letter == 'T' {
                "is not a Slack team id (T followed by upper-case letters and digits, like T0123ABCD)"
            } else {
                "is not a Slack enterprise id (E followed by upper-case letters and digits, like E0123ABCD)"
            },
        ))
    }
}

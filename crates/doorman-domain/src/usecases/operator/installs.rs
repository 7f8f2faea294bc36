//! Install links for customers, and the installations they made.

use std::time::Duration;

use super::{Operator, entry, named_by};
use crate::errors::{OperatorError, ValidationError};
use crate::model::{AuditAction, Caller, InstallLink, InstallationSummary, Platform, TenantId, WorkspaceId};
use crate::ports::{Clock, InstallRecords, OperatorPorts, Workspaces};

/// How long an install link stays usable: a minute to 30 days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLifetime(Duration);

impl LinkLifetime {
    pub const MIN: Duration = Duration::from_secs(60);
    pub const MAX: Duration = Duration::from_secs(30 * 24 * 3600);
    /// When a link's lifetime is not given: a day.
    pub const DEFAULT: Duration = Duration::from_secs(24 * 3600);

    pub fn new(lifetime: Duration) -> Result<Self, ValidationError> {
        if !(Self::MIN..=Self::MAX).contains(&lifetime) {
            return Err(ValidationError::new(
                "install link lifetime",
                "must be between 1 minute and 30 days",
            ));
        }
        Ok(Self(lifetime))
    }

    pub fn get(self) -> Duration {
        self.0
    }
}

impl<P: OperatorPorts> Operator<P> {
    /// Whether install links can be made (the Slack app is configured).
    pub fn installs_on(&self) -> bool {
        self.settings.install_base_url.is_some()
    }

    /// A link to hand a customer: their browser goes through Slack's consent and back, and the
    /// workspace is installed and linked to the tenant. Usable for several installs until it
    /// expires.
    pub async fn create_install_link(
        &self,
        caller: &Caller,
        tenant: TenantId,
        lifetime: LinkLifetime,
    ) -> Result<InstallLink, OperatorError> {
        self.writable(caller, tenant).await?;
        let Some(base) = &self.settings.install_base_url else { return Err(OperatorError::InstallsOff) };
        // At most 30 days ahead: it cannot overflow.
        let expires_at =
            self.ports.clock().now() + chrono::Duration::from_std(lifetime.get()).unwrap_or_default();
        let audit = entry(
            caller,
            AuditAction::InstallLinkCreate,
            tenant,
            Some(format!("expires {}", expires_at.to_rfc3339())),
        );
        let token = self.ports.installs().create_link(tenant, expires_at, &audit).await?;
        Ok(InstallLink { url: format!("{}/slack/install/{token}", base.trim_end_matches('/')), expires_at })
    }

    /// Installations, never a token: of one tenant, or (a caller for every tenant) of all.
    pub async fn installations(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
    ) -> Result<Vec<InstallationSummary>, OperatorError> {
        Ok(self.ports.installs().list(self.scoped(caller, tenant).await?).await?)
    }

    /// Removes the tenant's installation of the workspace `id` names, and the workspace's
    /// link, as Slack's `app_uninstalled` does.
    pub async fn uninstall(
        &self,
        caller: &Caller,
        tenant: TenantId,
        id: &WorkspaceId,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let installations = self.ports.installs().list(Some(tenant)).await?;
        let installed = named_by(installations, id, "installation", |i| &i.workspace)?;
        let audit = entry(caller, AuditAction::InstallationRemove, tenant, installed.workspace.to_string());
        let removed =
            self.ports.workspaces().remove(tenant, Platform::Slack, &installed.workspace, &audit).await?;
        if removed.installation {
            Ok(())
        } else {
            // Removed meanwhile by someone else: as absent as if it had never been there.
            Err(OperatorError::NotFound { what: "installation", id: id.to_string() })
        }
    }
}

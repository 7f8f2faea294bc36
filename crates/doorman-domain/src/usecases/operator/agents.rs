//! A tenant's agent: where it is, its secret, paused or not.

use super::{Operator, entry};
use crate::errors::OperatorError;
use crate::model::{AgentSecret, AgentSummary, AgentUrl, AuditAction, Caller, TenantId};
use crate::ports::{Agents, Destinations, OperatorPorts};

impl<P: OperatorPorts> Operator<P> {
    /// The tenant's agent, never its secret.
    pub async fn agent(&self, caller: &Caller, tenant: TenantId) -> Result<AgentSummary, OperatorError> {
        self.visible(caller, tenant).await?;
        self.ports.agents().get(tenant).await?.ok_or(OperatorError::NoAgent(tenant))
    }

    /// Sets the tenant's agent. The URL must pass the rule the bridge applies before every
    /// dispatch (https, and a public address once resolved, unless private ones are allowed):
    /// checked before anything is stored, so a refused agent is never set.
    pub async fn set_agent(
        &self,
        caller: &Caller,
        tenant: TenantId,
        url: AgentUrl,
        secret: AgentSecret,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        self.ports
            .destinations()
            .check(&url)
            .await
            .map_err(|reason| OperatorError::Refused { what: "agent URL", reason })?;
        let audit = entry(caller, AuditAction::AgentSet, tenant, url.shown());
        Ok(self.ports.agents().set(tenant, &url, &secret, &audit).await?)
    }

    /// Pauses (deliveries answered 503, so Slack retries later) or resumes the tenant's agent.
    pub async fn pause_agent(
        &self,
        caller: &Caller,
        tenant: TenantId,
        paused: bool,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let action = if paused { AuditAction::AgentPause } else { AuditAction::AgentResume };
        let audit = entry(caller, action, tenant, None);
        if self.ports.agents().set_paused(tenant, paused, &audit).await? {
            Ok(())
        } else {
            Err(OperatorError::NoAgent(tenant))
        }
    }

    /// Removes the tenant's agent: its deliveries are then answered 503 (no agent) until one
    /// is set again, and Slack retries them.
    pub async fn remove_agent(&self, caller: &Caller, tenant: TenantId) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let audit = entry(caller, AuditAction::AgentRemove, tenant, None);
        if self.ports.agents().remove(tenant, &audit).await? {
            Ok(())
        } else {
            Err(OperatorError::NoAgent(tenant))
        }
    }
}

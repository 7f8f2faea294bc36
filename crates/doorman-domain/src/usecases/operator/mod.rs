//! The operator's actions, shared by both faces: the `doorman` command line and the admin
//! HTTP API only convert their input into these calls and the answers into their output.
//!
//! Every action is called with a [`Caller`] (who, in which request) and follows one order:
//!
//! 1. **Access.** A tenant the caller may not see is answered as unknown (a scoped key cannot
//!    learn which tenants exist); a change by a read-only caller is forbidden. Both happen
//!    before anything is read or written.
//! 2. **Existence.** The tenant must exist (`UnknownTenant`).
//! 3. **Rules.** The org-wide rule, where agents may be, whether installs are configured, a
//!    workspace another tenant has, an idempotency key reused: each refused before any write.
//! 4. **The change, with its audit entry**, in one transaction of the port that makes it.
//!
//! One module per concern: [`tenants`], [`workspaces`], [`agents`], [`installs`],
//! [`events`] (accounting and replays), [`keys`], [`audit`] and [`maintenance`] (long runs
//! in batches, recorded before and after).

pub mod activity;
pub mod agents;
pub mod audit;
pub mod events;
pub mod installs;
pub mod keys;
pub mod maintenance;
pub mod replays;
pub mod tenants;
#[cfg(test)]
mod tests;
pub mod workspaces;

use std::time::Duration;

use crate::errors::OperatorError;
use crate::model::{AuditAction, AuditEntry, Caller, TenantId, TenantRecord, WorkspaceId, WorkspaceRef};
use crate::ports::{OperatorPorts, Tenants};

/// What the operator actions need besides their ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorSettings {
    /// The public origin install links start at (`{this}/slack/install/{token}`); `None`:
    /// installs are off (the Slack app is not configured).
    pub install_base_url: Option<String>,
    /// Where browsers reach the operator console, e.g. `https://admin.example`: sign-in links
    /// are `{this}/console/sign-in/{token}`; `None`: no link is made (a path alone does not
    /// work pasted to a customer).
    pub console_base_url: Option<String>,
    /// Unfinished for longer than this, a receipt reads as stranded.
    pub stranded_after: Duration,
    /// How long a replay holds its event: longer than a dispatch may take.
    pub replay_hold: Duration,
}

/// The operator use cases over their ports.
#[derive(Debug)]
pub struct Operator<P> {
    ports: P,
    settings: OperatorSettings,
}

impl<P: OperatorPorts> Operator<P> {
    pub fn new(ports: P, settings: OperatorSettings) -> Self {
        Self { ports, settings }
    }

    pub fn ports(&self) -> &P {
        &self.ports
    }

    /// The tenant, if the caller may see it and it exists; `UnknownTenant` otherwise, alike.
    pub(crate) async fn visible(
        &self,
        caller: &Caller,
        tenant: TenantId,
    ) -> Result<TenantRecord, OperatorError> {
        in_scope(caller, tenant)?;
        self.ports.tenants().get(tenant).await?.ok_or(OperatorError::UnknownTenant(tenant))
    }

    /// Which tenant a listing reads: the one asked for (if visible), else a scoped caller's
    /// own, else `None` (every tenant, for a caller that sees them all).
    pub(crate) async fn scoped(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
    ) -> Result<Option<TenantId>, OperatorError> {
        match (tenant, caller.actor.only_tenant()) {
            (Some(tenant), _) => Ok(Some(self.visible(caller, tenant).await?.id)),
            (None, own) => Ok(own),
        }
    }

    /// Like [`Operator::visible`], for a change: a read-only caller is forbidden (after the
    /// scope check, so a tenant out of scope still reads as unknown).
    pub(crate) async fn writable(
        &self,
        caller: &Caller,
        tenant: TenantId,
    ) -> Result<TenantRecord, OperatorError> {
        in_scope(caller, tenant)?;
        if !caller.actor.may_write() {
            return Err(OperatorError::Forbidden("this key is read-only"));
        }
        self.visible(caller, tenant).await
    }
}

/// A tenant the caller may not see is answered exactly like one that does not exist.
fn in_scope(caller: &Caller, tenant: TenantId) -> Result<(), OperatorError> {
    if caller.actor.may_see(tenant) { Ok(()) } else { Err(OperatorError::UnknownTenant(tenant)) }
}

/// The one of `found` that `id` names (a team id, or an org-wide install's enterprise id), or
/// `NotFound` naming `what`.
fn named_by<T>(
    found: Vec<T>,
    id: &WorkspaceId,
    what: &'static str,
    workspace: impl Fn(&T) -> &WorkspaceRef,
) -> Result<T, OperatorError> {
    found
        .into_iter()
        .find(|item| workspace(item).is_named_by(id))
        .ok_or_else(|| OperatorError::NotFound { what, id: id.to_string() })
}

/// The audit entry of a change to `tenant`.
fn entry(
    caller: &Caller,
    action: AuditAction,
    tenant: TenantId,
    target: impl Into<Option<String>>,
) -> AuditEntry {
    AuditEntry::new(caller, action, Some(tenant), target.into())
}

//! Acknowledge: everything that must happen before the HTTP answer.

use super::Inbound;
use crate::errors::StorageError;
use crate::model::{
    Agent, AgentEndpoint, Busy, Claim, InboundEvent, Job, NewReceipt, Permit, ReceiptKey, Tenant, TenantId,
};
use crate::ports::{AgentBridge, Clock, ReceiptStore, TenantDirectory, Unready};

/// What to answer the platform, and whether there is work to do afterwards.
#[derive(Debug, PartialEq, Eq)]
pub enum Acknowledgement {
    /// No tenant has linked this workspace. Answer 200 (a retry would not help) and do
    /// nothing; nothing was written.
    Ignored,
    /// Cannot take the event now. Answer 503 so the platform retries; nothing was written,
    /// so the retry is handled as if it were the first delivery (decision 5).
    Unavailable(Unavailability),
    /// Another delivery of the same event already claimed it. Answer 200, do nothing.
    Duplicate { tenant: TenantId },
    /// This very signed request (unnumbered, so never re-sent by the platform) was already
    /// accepted: someone is replaying it. Answer 401, do nothing.
    Replayed { tenant: TenantId },
    /// Answer 200, then run [`Inbound::handle`] on the job. A numbered event's claim is
    /// committed by now.
    Accepted(Box<Job>),
}

/// Why an event cannot be taken now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailability {
    /// The tenant has no agent configured.
    NoAgent { tenant: TenantId },
    /// The tenant's stored agent settings do not convert (a URL or secret that is not valid).
    Misconfigured { tenant: TenantId },
    /// An operator paused the tenant's bridge.
    Paused { tenant: TenantId },
    /// The tenant's agent has been failing; its circuit is open.
    CircuitOpen { tenant: TenantId },
    /// As much work is in flight as the tenant, or the process, may have.
    Busy { tenant: TenantId, limit: Busy },
    /// The tenant directory or the receipt store could not answer.
    Storage(StorageError),
    /// Doorman itself failed while deciding (a bug: the task deciding it panicked). Nothing
    /// is known to have been written, so the platform is asked to retry.
    Internal,
}

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
    B: AgentBridge,
    R: ReceiptStore,
    C: Clock,
{
    /// Decides the answer to one delivery: resolve, take a place with the bridge (circuit
    /// and bounds), claim (numbered events) or record the request's fingerprint (unnumbered
    /// ones). The claim is the last step and is committed when this returns, so a concurrent
    /// retry is refused at once (decisions 1, 2 and 5).
    pub async fn acknowledge(&self, event: InboundEvent) -> Acknowledgement {
        let (tenant, agent, permit) = match self.admit(&event).await {
            Admission::Admitted { tenant, agent, permit } => (tenant, agent, permit),
            Admission::Ignored => return Acknowledgement::Ignored,
            Admission::Unavailable(why) => return Acknowledgement::Unavailable(why),
        };
        warn_if_retried(tenant.id, &event);

        let received_at = self.clock.now();
        // Only numbered events are retried by the platform, so only they are claimed. An
        // unnumbered one is dispatched every time it arrives (decision 6), but the same
        // signed request arriving twice is a replay, not a second arrival.
        if let Some(external_id) = event.external_id.clone() {
            let receipt = NewReceipt {
                key: ReceiptKey { tenant: tenant.id, platform: event.platform, external_id },
                event_type: event.kind.label().clone(),
                attempt: event.delivery.attempt,
                claimed_at: received_at,
                retained: tenant.retain_payloads.then(|| event.payload.clone()),
            };
            match self.receipts.claim(&receipt).await {
                Ok(Claim::Claimed) => {}
                Ok(Claim::Duplicate) => return Acknowledgement::Duplicate { tenant: tenant.id },
                Err(error) => return Acknowledgement::Unavailable(Unavailability::Storage(error)),
            }
        } else if let Some(fingerprint) = &event.fingerprint {
            match self.receipts.claim_request(tenant.id, fingerprint).await {
                Ok(Claim::Claimed) => {}
                Ok(Claim::Duplicate) => return Acknowledgement::Replayed { tenant: tenant.id },
                Err(error) => return Acknowledgement::Unavailable(Unavailability::Storage(error)),
            }
        }
        let job =
            Job::new(tenant.id, agent, event, received_at, permit).with_installation(tenant.installation);
        Acknowledgement::Accepted(Box::new(job))
    }
}

/// What the first steps of a delivery (or a replay) found.
// Lives for one call and is matched at once: boxing the tenant would only add an allocation
// per delivery.
#[allow(clippy::large_enum_variant)]
pub(super) enum Admission {
    /// The tenant, its agent, and a place in the bounded work for the job.
    Admitted {
        tenant: Tenant,
        agent: AgentEndpoint,
        permit: Permit,
    },
    /// No tenant has linked the workspace.
    Ignored,
    Unavailable(Unavailability),
}

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
    B: AgentBridge,
{
    /// Resolves the event's tenant, checks its agent is set and not paused, and takes a place
    /// with the bridge (circuit and bounds). Writes nothing.
    pub(super) async fn admit(&self, event: &InboundEvent) -> Admission {
        let tenant = match self.directory.resolve(event.platform, &event.workspace).await {
            Ok(Some(tenant)) => tenant,
            Ok(None) => return Admission::Ignored,
            Err(error) => return Admission::Unavailable(Unavailability::Storage(error)),
        };
        let agent = match &tenant.agent {
            Agent::NotSet => return Admission::Unavailable(Unavailability::NoAgent { tenant: tenant.id }),
            Agent::Unusable(_) => {
                return Admission::Unavailable(Unavailability::Misconfigured { tenant: tenant.id });
            }
            Agent::Ready(agent) if agent.paused => {
                return Admission::Unavailable(Unavailability::Paused { tenant: tenant.id });
            }
            Agent::Ready(agent) => agent.clone(),
        };
        // A place in the bounded work, before anything is written: a delivery refused here is
        // answered 503 and its retry is handled afresh (decision 5).
        match self.bridge.admit(tenant.id) {
            Ok(permit) => Admission::Admitted { tenant, agent, permit },
            Err(Unready::CircuitOpen) => {
                Admission::Unavailable(Unavailability::CircuitOpen { tenant: tenant.id })
            }
            Err(Unready::Busy(limit)) => {
                Admission::Unavailable(Unavailability::Busy { tenant: tenant.id, limit })
            }
        }
    }
}

/// A retry is the only signal a deployment gets that its acknowledgements arrive too late
/// (decision 7). The header is unsigned: this logs it and decides nothing.
fn warn_if_retried(tenant: TenantId, event: &InboundEvent) {
    let delivery = event.delivery;
    if delivery.attempt == 0 {
        return;
    }
    tracing::warn!(
        tenant.id = %tenant,
        event.id = event.external_id.as_ref().map(|id| id.as_str()),
        delivery.attempt = delivery.attempt,
        delivery.retry_reason = delivery.retry_reason.map(|r| r.as_str()),
        "platform re-sent an event: acknowledgements may be arriving too late"
    );
}

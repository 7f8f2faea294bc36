//! Acknowledge: everything that must happen before the HTTP answer.

use super::Inbound;
use crate::errors::StorageError;
use crate::model::{
    Agent, AgentEndpoint, Busy, Claim, ClaimId, InboundEvent, Job, NewReceipt, Permit, ReceiptKey, Tenant,
    TenantId,
};
use crate::ports::{AgentBridge, Clock, ReceiptStore, TenantDirectory, Unready};

/// What to answer the platform: the one vocabulary metrics, answers and logs are derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acknowledgement {
    /// No tenant has linked this workspace. Answer 200 (a retry would not help) and do
    /// nothing; nothing was written.
    Ignored,
    /// Cannot take the event now. Answer 503 so the platform retries; nothing was written,
    /// so the retry is handled as if it were the first delivery (decision 5). The one
    /// exception is a claim whose commit was not confirmed
    /// (`Storage(StorageError::Unconfirmed)`): the decision then carries an unsettled job, and
    /// whichever comes first, that job settling its claim or the platform's retry, dispatches
    /// the event; the other finds it claimed.
    Unavailable(Unavailability),
    /// Another delivery of the same event already claimed it. Answer 200, do nothing.
    Duplicate { tenant: TenantId },
    /// This very signed request (unnumbered, so never re-sent by the platform) was already
    /// accepted: someone is replaying it. Answer 401, do nothing.
    Replayed { tenant: TenantId },
    /// Answer 200; the decision's job goes to [`Inbound::handle`]. `numbered`: a claim was
    /// made, and committed by now.
    Accepted { tenant: TenantId, numbered: bool },
}

/// The answer to one delivery and, when it is `Accepted`, the job to hand to
/// [`Inbound::handle`]. Only [`Inbound::acknowledge`] makes one, so a job exists only for an
/// accepted delivery, or for one whose claim was not confirmed (answered 503, its job
/// [unsettled](Job::unsettled_claim)).
#[derive(Debug, PartialEq, Eq)]
pub struct Decision {
    acknowledgement: Acknowledgement,
    job: Option<Box<Job>>,
}

impl Decision {
    fn answer(acknowledgement: Acknowledgement) -> Self {
        Self { acknowledgement, job: None }
    }

    /// The claim was sent but not confirmed: answer 503, and settle it after the answer.
    fn unsettled(job: Job, error: StorageError) -> Self {
        Self {
            acknowledgement: Acknowledgement::Unavailable(Unavailability::Storage(error)),
            job: Some(Box::new(job)),
        }
    }

    fn accepted(job: Job) -> Self {
        let acknowledgement =
            Acknowledgement::Accepted { tenant: job.tenant(), numbered: job.receipt_key().is_some() };
        Self { acknowledgement, job: Some(Box::new(job)) }
    }

    pub fn acknowledgement(&self) -> &Acknowledgement {
        &self.acknowledgement
    }

    /// The answer, and the job to hand to [`Inbound::handle`] (accepted deliveries, and
    /// unconfirmed claims to settle).
    pub fn into_parts(self) -> (Acknowledgement, Option<Job>) {
        (self.acknowledgement, self.job.map(|job| *job))
    }
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
    /// The tenant directory or the receipt store could not answer (`Unavailable`,
    /// `Unconfirmed`: waiting may fix it), or answered something unexpected (`Unexpected`: a
    /// bug or a schema drift, which a retry meets again; answered 500, not 503).
    Storage(StorageError),
    /// Doorman itself failed while deciding (a bug: the task deciding it panicked). Nothing
    /// is known to have been written, so the platform is asked to retry.
    Internal,
}

impl Unavailability {
    /// The stable word metrics labels, answer bodies and log fields use.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::NoAgent { .. } => "no_agent",
            Self::Misconfigured { .. } => "misconfigured",
            Self::Paused { .. } => "paused",
            Self::CircuitOpen { .. } => "circuit_open",
            Self::Busy { .. } => "busy",
            // Not an outage: the store answered, and the same request will fail the same way.
            Self::Storage(StorageError::Unexpected(_)) => "storage_error",
            Self::Storage(_) => "storage",
            Self::Internal => "internal",
        }
    }
}

/// For people (a replay's report): what the word means.
impl std::fmt::Display for Unavailability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoAgent { .. } => f.write_str("the tenant has no agent set"),
            Self::Misconfigured { .. } => f.write_str("the tenant's stored agent settings are not valid"),
            Self::Paused { .. } => f.write_str("the tenant's agent is paused"),
            Self::CircuitOpen { .. } => f.write_str("the agent's circuit is open (it has been failing)"),
            Self::Busy { limit, .. } => write!(f, "too much in flight (the {} bound)", limit.as_str()),
            Self::Storage(error) => write!(f, "storage: {error}"),
            Self::Internal => f.write_str("internal error"),
        }
    }
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
    pub async fn acknowledge(&self, event: InboundEvent) -> Decision {
        let (tenant, agent, permit) = match self.admit(&event).await {
            Admission::Admitted { tenant, agent, permit } => (tenant, agent, permit),
            Admission::Ignored => return Decision::answer(Acknowledgement::Ignored),
            Admission::Unavailable(why) => return Decision::answer(Acknowledgement::Unavailable(why)),
        };
        warn_if_retried(tenant.id, &event);

        let received_at = self.clock.now();
        // Only numbered events are retried by the platform, so only they are claimed. An
        // unnumbered one is dispatched every time it arrives (decision 6), but the same
        // signed request arriving twice is a replay, not a second arrival.
        if let Some(external_id) = event.external_id.clone() {
            let receipt = NewReceipt {
                key: ReceiptKey { tenant: tenant.id, platform: event.platform, external_id },
                claim: ClaimId::generate(),
                event_type: event.kind.label().clone(),
                attempt: event.delivery.attempt,
                claimed_at: received_at,
                retained: tenant.retain_payloads.then(|| event.payload.clone()),
            };
            match self.receipts.claim(&receipt).await {
                Ok(Claim::Claimed) => {}
                Ok(Claim::Duplicate) => {
                    return Decision::answer(Acknowledgement::Duplicate { tenant: tenant.id });
                }
                Err(error @ StorageError::Unconfirmed(_)) => {
                    // It may be claimed, by this delivery. Answer 503 and settle it after the
                    // answer: a claim that holds the event is dispatched then, so a retry
                    // finding it claimed loses nothing.
                    let job = Job::new(tenant.id, agent, event, received_at, permit)
                        .with_installation(tenant.installation)
                        .unsettled(receipt);
                    return Decision::unsettled(job, error);
                }
                Err(error) => {
                    return Decision::answer(Acknowledgement::Unavailable(Unavailability::Storage(error)));
                }
            }
        } else if let Some(fingerprint) = &event.fingerprint {
            match self.receipts.claim_request(tenant.id, fingerprint).await {
                Ok(Claim::Claimed) => {}
                Ok(Claim::Duplicate) => {
                    return Decision::answer(Acknowledgement::Replayed { tenant: tenant.id });
                }
                Err(error) => {
                    return Decision::answer(Acknowledgement::Unavailable(Unavailability::Storage(error)));
                }
            }
        }
        let job =
            Job::new(tenant.id, agent, event, received_at, permit).with_installation(tenant.installation);
        Decision::accepted(job)
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
        let (tenant, agent) = match self.agent_for(event).await {
            Ok(found) => found,
            Err(Unresolved::Ignored) => return Admission::Ignored,
            Err(Unresolved::Unavailable(why)) => return Admission::Unavailable(why),
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

/// Why an event's tenant and agent were not found ready.
pub(super) enum Unresolved {
    /// No tenant has linked the workspace.
    Ignored,
    Unavailable(Unavailability),
}

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
{
    /// Resolves the event's tenant and checks its agent is set and not paused. Writes nothing
    /// and takes no place with the bridge.
    pub(super) async fn agent_for(
        &self,
        event: &InboundEvent,
    ) -> Result<(Tenant, AgentEndpoint), Unresolved> {
        let tenant = match self.directory.resolve(event.platform, &event.workspace).await {
            Ok(Some(tenant)) => tenant,
            Ok(None) => return Err(Unresolved::Ignored),
            Err(error) => return Err(Unresolved::Unavailable(Unavailability::Storage(error))),
        };
        let agent = match &tenant.agent {
            Agent::NotSet => {
                return Err(Unresolved::Unavailable(Unavailability::NoAgent { tenant: tenant.id }));
            }
            Agent::Unusable(_) => {
                return Err(Unresolved::Unavailable(Unavailability::Misconfigured { tenant: tenant.id }));
            }
            Agent::Ready(agent) if agent.paused => {
                return Err(Unresolved::Unavailable(Unavailability::Paused { tenant: tenant.id }));
            }
            Agent::Ready(agent) => agent.clone(),
        };
        Ok((tenant, agent))
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

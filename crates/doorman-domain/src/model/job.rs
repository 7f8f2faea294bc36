//! A job: an accepted event on its way to an agent.

use chrono::{DateTime, Utc};

use super::{AgentEndpoint, InboundEvent, Installation, NewReceipt, Permit, ReceiptKey, TenantId};

/// An accepted event on its way to a tenant's agent.
///
/// Only [`Inbound::acknowledge`](crate::Inbound::acknowledge) makes one (the constructor is
/// private to this crate), and only once it has decided to accept the delivery: for a
/// numbered event, after its claim has committed. So holding a `Job` *is* the proof that
/// dispatching it is allowed, and "no dispatch without acknowledge" is a fact of the types.
/// The one exception carries its claim with it: when a claim was sent but its commit never
/// confirmed, the job is [unsettled](Job::unsettled_claim) and
/// [`Inbound::handle`](crate::Inbound::handle) dispatches it only once the claim is found to
/// hold the event.
///
/// Outside the domain crate a `Job` can be read, never built:
///
/// ```compile_fail
/// # use doorman_domain::*;
/// fn forge(tenant: TenantId, agent: AgentEndpoint, event: InboundEvent, permit: Permit) -> Job {
///     Job { tenant, agent, event, received_at: chrono::Utc::now(), permit }
/// }
/// ```
///
/// ```compile_fail
/// # use doorman_domain::*;
/// fn forge(tenant: TenantId, agent: AgentEndpoint, event: InboundEvent, permit: Permit) -> Job {
///     Job::new(tenant, agent, event, chrono::Utc::now(), permit)
/// }
/// ```
///
/// ```
/// # use doorman_domain::*;
/// fn describe(job: &Job) -> String {
///     format!("{} {} {}", job.tenant(), job.event().kind.name(), job.received_at())
/// }
/// ```
///
/// A job holds its place in the bounded work in flight (a [`Permit`]) until it is dropped,
/// when its dispatch has ended; so it is not `Clone`.
#[derive(Debug, PartialEq, Eq)]
pub struct Job {
    tenant: TenantId,
    agent: AgentEndpoint,
    event: InboundEvent,
    received_at: DateTime<Utc>,
    permit: Permit,
    installation: Option<Installation>,
    unsettled: Option<NewReceipt>,
}

impl Job {
    pub(crate) fn new(
        tenant: TenantId,
        agent: AgentEndpoint,
        event: InboundEvent,
        received_at: DateTime<Utc>,
        permit: Permit,
    ) -> Self {
        Self { tenant, agent, event, received_at, permit, installation: None, unsettled: None }
    }

    /// A job whose claim was sent but never confirmed: it is dispatched only once the claim
    /// is settled as this delivery's.
    pub(crate) fn unsettled(self, claim: NewReceipt) -> Self {
        Self { unsettled: Some(claim), ..self }
    }

    /// The claim to settle before anything is dispatched, for a job whose claim was never
    /// confirmed; `None` for every other job.
    pub fn unsettled_claim(&self) -> Option<&NewReceipt> {
        self.unsettled.as_ref()
    }

    /// Gives the job's place in the bounded work in flight back (and, if it was the circuit's
    /// half-open probe, the probe), for a wait that is not a dispatch: settling a claim can
    /// take minutes.
    pub(crate) fn give_back_permit(&mut self) {
        self.permit = Permit::unbounded();
    }

    /// The job holds `permit` from now on.
    pub(crate) fn hold(&mut self, permit: Permit) {
        self.permit = permit;
    }

    /// The workspace's installation, as resolved when the job was accepted.
    pub(crate) fn with_installation(self, installation: Option<Installation>) -> Self {
        Self { installation, ..self }
    }

    /// Builds a job without an acknowledgement, for adapters' tests of the bridge. Only with
    /// the `mocks` feature, which the `doorman` binary never enables (`just check-hexagon`).
    #[cfg(any(test, feature = "mocks"))]
    pub fn for_tests(
        tenant: TenantId,
        agent: AgentEndpoint,
        event: InboundEvent,
        received_at: DateTime<Utc>,
    ) -> Self {
        Self::new(tenant, agent, event, received_at, Permit::unbounded())
    }

    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// Where to send it, as resolved when it was accepted.
    pub fn agent(&self) -> &AgentEndpoint {
        &self.agent
    }

    pub fn event(&self) -> &InboundEvent {
        &self.event
    }

    /// The app's installation in the event's workspace, if any (its bot token is handed to
    /// the agent with the dispatch).
    pub fn installation(&self) -> Option<&Installation> {
        self.installation.as_ref()
    }

    /// When Doorman accepted the delivery (sent to the agent as `received_at`).
    pub fn received_at(&self) -> DateTime<Utc> {
        self.received_at
    }

    /// The receipt this job holds a claim on; `None` for unnumbered events, which are
    /// dispatched unclaimed.
    pub fn receipt_key(&self) -> Option<ReceiptKey> {
        self.event.external_id.clone().map(|external_id| ReceiptKey {
            tenant: self.tenant,
            platform: self.event.platform,
            external_id,
        })
    }
}

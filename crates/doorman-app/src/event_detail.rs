//! One event as every operator face shows it (the API's document, the console's page, `doorman
//! receipts show`): what became of it, the request Doorman sends its agent, and its payload as
//! the caller may see it. Three use cases, each checking the caller's access on its own; the
//! payload's permission is the domain's ([`doorman_domain::KeyScope::payload_access`]).

use doorman_domain::ports::OperatorPorts;
use doorman_domain::usecases::operator::Operator;
use doorman_domain::{AgentUrl, Caller, EventReport, ExternalEventId, OperatorError, PayloadView, TenantId};

use crate::documents::EventDetailDoc;

/// Whether the event's payload is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// Shown if the caller may read payloads, else hidden saying why (the API, the console).
    AsAllowed,
    /// Not read at all (the command line without `--payload`).
    NotAsked,
}

/// One event, read.
#[derive(Debug, Clone)]
pub struct EventDetail {
    pub report: EventReport,
    /// The tenant's agent now: where the request goes; `None` when it has none.
    pub agent: Option<AgentUrl>,
    /// `None` when not asked.
    pub payload: Option<PayloadView>,
}

impl EventDetail {
    /// `NotFound` when the tenant has no receipt of the event.
    pub async fn read<P: OperatorPorts>(
        operator: &Operator<P>,
        caller: &Caller,
        tenant: TenantId,
        event: ExternalEventId,
        payload: Payload,
    ) -> Result<Self, OperatorError> {
        let report = operator.event(caller, tenant, event.clone()).await?;
        let payload = match payload {
            Payload::AsAllowed => Some(operator.event_payload(caller, tenant, event).await?),
            Payload::NotAsked => None,
        };
        let agent = match operator.agent(caller, tenant).await {
            Ok(agent) => Some(agent.url),
            Err(OperatorError::NoAgent(_)) => None,
            Err(other) => return Err(other),
        };
        Ok(Self { report, agent, payload })
    }

    /// Its document (a tenant without an agent shows no request; a payload not asked for is
    /// neither shown nor said why).
    pub fn document(&self) -> EventDetailDoc {
        EventDetailDoc::new(self.report.clone(), self.agent.as_ref(), self.payload.clone())
    }
}

/// The event's document, as the API and the console show it: read with [`Payload::AsAllowed`].
pub async fn read<P: OperatorPorts>(
    operator: &Operator<P>,
    caller: &Caller,
    tenant: TenantId,
    event: ExternalEventId,
) -> Result<EventDetailDoc, OperatorError> {
    Ok(EventDetail::read(operator, caller, tenant, event, Payload::AsAllowed).await?.document())
}

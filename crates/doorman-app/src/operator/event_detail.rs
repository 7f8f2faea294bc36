//! One event as both faces show it (the API's document, the console's page): what became of
//! it, the request Doorman sends its agent, and its payload as the caller may see it. Three
//! use cases, each checking the caller's access on its own; the payload's permission is the
//! domain's ([`doorman_domain::KeyScope::payload_access`]).

use doorman_domain::{Caller, ExternalEventId, OperatorError, TenantId};

use super::state::AdminState;
use crate::documents::EventDetailDoc;

impl AdminState {
    /// `NotFound` when the tenant has no receipt of the event; a tenant without an agent
    /// shows no request.
    pub async fn event_detail(
        &self,
        caller: &Caller,
        tenant: TenantId,
        event: ExternalEventId,
    ) -> Result<EventDetailDoc, OperatorError> {
        let report = self.operator.event(caller, tenant, event.clone()).await?;
        let payload = self.operator.event_payload(caller, tenant, event).await?;
        let agent = match self.operator.agent(caller, tenant).await {
            Ok(agent) => Some(agent.url),
            Err(OperatorError::NoAgent(_)) => None,
            Err(other) => return Err(other),
        };
        Ok(EventDetailDoc::new(report, agent.as_ref(), payload))
    }
}

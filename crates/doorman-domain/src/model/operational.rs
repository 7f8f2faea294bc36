//! What the platform's operators are told through the operational webhook (issue 41): an
//! event whose redeliveries are spent, an agent disabled after failing for days, a circuit
//! opened or closed. Configured once for the deployment; each is sent signed as Standard
//! Webhooks signs, and retried on the standard schedule.

use chrono::{DateTime, Utc};

use super::{ExternalEventId, TenantId};

/// Which operational event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationalKind {
    /// A numbered event's redelivery schedule was spent without the agent taking it.
    EventExhausted,
    /// An agent whose every delivery failed for the configured time was disabled.
    AgentDisabled,
    /// A tenant's circuit opened (its agent kept failing): deliveries are answered 503.
    AgentCircuitOpened,
    /// A tenant's circuit closed again (a dispatch succeeded).
    AgentCircuitClosed,
}

impl OperationalKind {
    pub const ALL: [Self; 4] =
        [Self::EventExhausted, Self::AgentDisabled, Self::AgentCircuitOpened, Self::AgentCircuitClosed];

    /// The event's `type` on the wire and in storage.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::EventExhausted => "event.exhausted",
            Self::AgentDisabled => "agent.disabled",
            Self::AgentCircuitOpened => "agent.circuit_opened",
            Self::AgentCircuitClosed => "agent.circuit_closed",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == word)
    }
}

/// One operational event, as it is recorded to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationalEvent {
    pub kind: OperationalKind,
    pub tenant: TenantId,
    /// The numbered event it is about (`event.exhausted`).
    pub external_event_id: Option<ExternalEventId>,
    pub at: DateTime<Utc>,
    /// A short reason, for people (the last attempt's failure; since when the agent failed).
    pub detail: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_back_from_its_word() {
        for kind in OperationalKind::ALL {
            assert_eq!(OperationalKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(OperationalKind::parse("agent.paused"), None);
    }
}

//! Replays: an operator sending an acknowledged event to its agent again, from the payload a
//! retaining tenant kept (at most once stays the default; nothing is re-sent on its own).

use chrono::{DateTime, Utc};

use super::{ExternalEventId, InboundEvent, ReceiptKey};

/// Which of a tenant's receipts to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaySelection {
    /// One event.
    Event(ExternalEventId),
    /// Every unhandled receipt whose last dispatch failed at or after this instant.
    FailedSince(DateTime<Utc>),
    /// Every stranded receipt: claimed before this instant, never handled, no failure.
    StrandedBefore(DateTime<Utc>),
}

/// What taking a receipt's kept event for one replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayTake {
    /// The event as it was received (its delivery marked as a replay), and when it was
    /// claimed. The replay is counted on the receipt and holds the event until its outcome
    /// is recorded or the hold expires.
    Event { event: Box<InboundEvent>, claimed_at: DateTime<Utc> },
    /// Handled meanwhile: never replayed.
    Handled,
    /// No payload was kept (the tenant does not retain payloads, or did not when the event
    /// was claimed).
    NoPayload,
    /// Another replay holds it.
    InProgress,
    /// No receipt (pruned, or never claimed).
    Unknown,
}

/// Why an event was not replayed, or what its replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// `--dry-run`: it would be replayed.
    WouldReplay,
    /// The agent took it; the receipt is handled.
    Handled,
    /// The agent took it, but the receipt could not be marked handled (it stays listed).
    HandledUnrecorded,
    /// The replay's dispatch failed; the failure is recorded on the receipt.
    Failed(String),
    /// Not sent: already handled.
    AlreadyHandled,
    /// Not sent: no payload was kept.
    NoPayload,
    /// Not sent: another replay holds it.
    InProgress,
    /// Not sent: no such receipt.
    Unknown,
    /// Not sent, for this reason (the workspace moved to another tenant, the agent is not
    /// set or paused, the circuit is open, too much is in flight).
    NotSent(String),
}

impl ReplayOutcome {
    /// A short stable word for reports and `--json`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::WouldReplay => "would_replay",
            Self::Handled => "handled",
            Self::HandledUnrecorded => "handled_unrecorded",
            Self::Failed(_) => "failed",
            Self::AlreadyHandled => "already_handled",
            Self::NoPayload => "no_payload",
            Self::InProgress => "in_progress",
            Self::Unknown => "unknown",
            Self::NotSent(_) => "not_sent",
        }
    }

    /// Whether the agent took the event (or, in a dry run, would be sent it).
    pub fn is_success(&self) -> bool {
        matches!(self, Self::WouldReplay | Self::Handled | Self::HandledUnrecorded)
    }
}

/// One line of a replay's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    pub key: ReceiptKey,
    pub outcome: ReplayOutcome,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_has_a_stable_word_and_only_a_taken_event_is_a_success() {
        use ReplayOutcome::*;
        let table = [
            (WouldReplay, "would_replay", true),
            (Handled, "handled", true),
            (HandledUnrecorded, "handled_unrecorded", true),
            (Failed("agent answered HTTP 500".into()), "failed", false),
            (AlreadyHandled, "already_handled", false),
            (NoPayload, "no_payload", false),
            (InProgress, "in_progress", false),
            (Unknown, "unknown", false),
            (NotSent("agent paused".into()), "not_sent", false),
        ];
        for (outcome, word, success) in table {
            assert_eq!((outcome.as_str(), outcome.is_success()), (word, success), "{outcome:?}");
        }
    }
}

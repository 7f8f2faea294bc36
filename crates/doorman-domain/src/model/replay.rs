//! Replays: an operator sending an acknowledged event to its agent again, from the payload a
//! retaining tenant kept (at most once stays the default; nothing is re-sent on its own).

use chrono::{DateTime, Utc};

use super::{Caller, EventFilter, EventState, ExternalEventId, Failure, InboundEvent, ReceiptKey, TenantId};

super::ids::uuid_id!(
    /// A replay job: an operator's request to send a tenant's kept events again, run by an
    /// admin process in the background.
    ReplayJobId,
    "replay job id"
);

/// Which of a tenant's receipts to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaySelection {
    /// One event.
    Event(ExternalEventId),
    /// Every unhandled receipt whose last dispatch failed at or after this instant.
    FailedSince(DateTime<Utc>),
    /// Every stranded receipt: claimed before this instant, never handled, no failure.
    StrandedBefore(DateTime<Utc>),
    /// Events chosen by id (a selection in a list), at most [`MAX_REPLAY_EVENTS`]; one
    /// without a receipt is reported, not left out.
    Chosen(Vec<ExternalEventId>),
    /// The events a listing's filter selects, failed or stranded, the first `limit` (at most
    /// [`MAX_REPLAY_EVENTS`]) in claim order, oldest first: only what the list's filter
    /// selects is replayed (the list shows the newest first; the preview names which).
    Matching { filter: EventFilter, limit: u32 },
}

/// The most events one replay job selects.
pub const MAX_REPLAY_EVENTS: u32 = 1000;

/// Why a bulk replay's selection was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionRefused {
    #[error("choose at least one event")]
    NoneChosen,
    #[error("at most {MAX_REPLAY_EVENTS} events in one replay (a job per part of the list)")]
    TooMany,
    #[error(
        "only failed or stranded events are replayed by a filter (a handled one is never sent again, an in-flight one is being sent)"
    )]
    NotReplayable,
    #[error("the limit is 1 to {MAX_REPLAY_EVENTS} events")]
    Limit,
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

    /// What it means, for people.
    pub fn detail(&self) -> String {
        match self {
            Self::WouldReplay => "would be sent again".into(),
            Self::Handled => "sent again; the agent took it; the receipt is handled".into(),
            Self::HandledUnrecorded => "sent again and taken, but the receipt could not be marked handled".into(),
            Self::Failed(reason) => format!("sent again; failed: {reason}"),
            Self::AlreadyHandled => "refused: already handled".into(),
            Self::NoPayload => {
                "refused: no payload kept (the tenant did not retain payloads when it was claimed: turn retain-payloads on for the next ones)".into()
            }
            Self::InProgress => "refused: another replay of it is in progress".into(),
            Self::Unknown => "refused: no receipt (never received, or pruned)".into(),
            Self::NotSent(why) => format!("not sent: {why}"),
        }
    }

    /// Whether the agent took the event (or, in a dry run, would be sent it).
    pub fn is_success(&self) -> bool {
        matches!(self, Self::WouldReplay | Self::Handled | Self::HandledUnrecorded)
    }
}

impl ReplaySelection {
    /// Events chosen by id: each once, in the order given.
    pub fn chosen(ids: Vec<ExternalEventId>) -> Result<Self, SelectionRefused> {
        let mut unique: Vec<ExternalEventId> = Vec::with_capacity(ids.len());
        for id in ids {
            if !unique.contains(&id) {
                unique.push(id);
            }
        }
        match unique.len() {
            0 => Err(SelectionRefused::NoneChosen),
            n if n > MAX_REPLAY_EVENTS as usize => Err(SelectionRefused::TooMany),
            _ => Ok(Self::Chosen(unique)),
        }
    }

    /// The events a failed or stranded listing's filter selects, the first `limit`.
    pub fn matching(filter: EventFilter, limit: u32) -> Result<Self, SelectionRefused> {
        if !matches!(filter.state, Some(EventState::Failed | EventState::Stranded)) {
            return Err(SelectionRefused::NotReplayable);
        }
        if !(1..=MAX_REPLAY_EVENTS).contains(&limit) {
            return Err(SelectionRefused::Limit);
        }
        Ok(Self::Matching { filter, limit })
    }

    /// The events it names by id (each reported even without a receipt); none for a filter.
    pub fn named(&self) -> &[ExternalEventId] {
        match self {
            Self::Event(id) => std::slice::from_ref(id),
            Self::Chosen(ids) => ids,
            Self::FailedSince(_) | Self::StrandedBefore(_) | Self::Matching { .. } => &[],
        }
    }

    /// In words, for the job and its audit entry: the whole filter, or the chosen ids (the
    /// first ten, then how many more).
    pub fn describe(&self) -> String {
        match self {
            Self::Event(id) => format!("event {id}"),
            Self::FailedSince(since) => format!("failed since {}", since.to_rfc3339()),
            Self::StrandedBefore(before) => format!("stranded before {}", before.to_rfc3339()),
            Self::Chosen(ids) => {
                const SHOWN: usize = 10;
                let shown: Vec<&str> = ids.iter().take(SHOWN).map(ExternalEventId::as_str).collect();
                let more = ids.len().saturating_sub(SHOWN);
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                format!("{}: {}{more}", counted(ids.len(), "chosen event"), shown.join(", "))
            }
            Self::Matching { filter, limit } => {
                let state = filter.state.map_or("any", EventState::as_str);
                let mut words = format!("{state} events");
                if let Some(kind) = &filter.event_type {
                    words.push_str(&format!(", type {kind}"));
                }
                if let Some(since) = filter.since {
                    words.push_str(&format!(", since {}", since.to_rfc3339()));
                }
                if let Some(until) = filter.until {
                    words.push_str(&format!(", until {}", until.to_rfc3339()));
                }
                format!("{words} (the first {limit})")
            }
        }
    }
}

/// `n` of `what` in words, singular for one: `1 chosen event`, `2 chosen events`, `0 events`.
pub(crate) fn counted(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// A replay job about to be written: its events chosen, in claim order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReplayJob {
    pub id: ReplayJobId,
    pub tenant: TenantId,
    /// What was asked ([`ReplaySelection::describe`]).
    pub selection: String,
    pub requested_by: Caller,
    pub events: Vec<ExternalEventId>,
    /// Made already held (and started) by its maker until then, who runs it itself (the
    /// command line); `None`: queued for an admin process to take.
    pub held_until: Option<DateTime<Utc>>,
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// No process has started it yet.
    Queued,
    /// A process is sending its events, one at a time.
    Running,
    /// Every event has its outcome.
    Finished,
}

impl JobState {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Finished => "finished",
        }
    }
}

/// One event of a job, and how its replay ended (once it has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEvent {
    pub external_id: ExternalEventId,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// [`ReplayOutcome::as_str`], and what it means for people.
    pub outcome: Option<String>,
    pub detail: Option<String>,
}

/// A replay job as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayJob {
    pub id: ReplayJobId,
    pub tenant: TenantId,
    pub selection: String,
    /// Who asked, as the audit trail names them.
    pub requested_by: Caller,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub total: u32,
    pub done: u32,
    /// Done and taken by the agent.
    pub succeeded: u32,
    /// Each event, in order (a listing of jobs leaves them out).
    pub events: Vec<JobEvent>,
}

impl ReplayJob {
    pub fn state(&self) -> JobState {
        match (self.started_at, self.finished_at) {
            (_, Some(_)) => JobState::Finished,
            (Some(_), None) => JobState::Running,
            (None, None) => JobState::Queued,
        }
    }
}

/// A job's event whose replay has just ended, to be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayResult {
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub outcome: ReplayOutcome,
    /// The receipt's last failure when the replay took it: how the dispatch before this one
    /// ended (`None`: it had not failed, or the replay did not take it).
    pub failure_before: Option<Failure>,
}

/// One replay of an event, as its history shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayAttempt {
    pub job: ReplayJobId,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
    pub detail: Option<String>,
    pub failure_before: Option<Failure>,
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

    fn id(raw: &str) -> ExternalEventId {
        ExternalEventId::new(raw).unwrap()
    }

    fn filter(state: Option<EventState>) -> EventFilter {
        EventFilter {
            state,
            since: Some("2026-12-01T10:00:00Z".parse().unwrap()),
            until: None,
            event_type: Some("app_mention".into()),
            stranded_before: "2026-12-01T09:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn a_choice_counts_each_event_once_and_holds_one_to_a_thousand() {
        let chosen = ReplaySelection::chosen(vec![id("Ev1"), id("Ev2"), id("Ev1")]).unwrap();
        assert_eq!(chosen, ReplaySelection::Chosen(vec![id("Ev1"), id("Ev2")]));
        assert_eq!(chosen.named(), [id("Ev1"), id("Ev2")]);
        assert_eq!(chosen.describe(), "2 chosen events: Ev1, Ev2");
        assert_eq!(ReplaySelection::chosen(vec![]), Err(SelectionRefused::NoneChosen));
        let many: Vec<_> = (0..=MAX_REPLAY_EVENTS).map(|n| id(&format!("Ev{n}"))).collect();
        assert_eq!(ReplaySelection::chosen(many.clone()), Err(SelectionRefused::TooMany));
        let most = ReplaySelection::chosen(many[..MAX_REPLAY_EVENTS as usize].to_vec()).unwrap();
        assert!(most.describe().starts_with("1000 chosen events: Ev0, Ev1,"), "{}", most.describe());
        assert!(most.describe().ends_with("Ev9 and 990 more"), "{}", most.describe());
    }

    #[test]
    fn one_chosen_event_is_said_in_the_singular_and_more_in_the_plural() {
        let one = ReplaySelection::chosen(vec![id("Ev1")]).unwrap();
        assert_eq!(one.describe(), "1 chosen event: Ev1");
        let two = ReplaySelection::chosen(vec![id("Ev1"), id("Ev2")]).unwrap();
        assert_eq!(two.describe(), "2 chosen events: Ev1, Ev2");
        assert_eq!([0, 1, 2].map(|n| counted(n, "event")), ["0 events", "1 event", "2 events"]);
    }

    #[test]
    fn a_filter_replays_failed_or_stranded_events_only_within_its_limit_and_says_all_of_itself() {
        let failed = ReplaySelection::matching(filter(Some(EventState::Failed)), 50).unwrap();
        assert!(failed.named().is_empty(), "a filter names no event");
        assert_eq!(
            failed.describe(),
            "failed events, type app_mention, since 2026-12-01T10:00:00+00:00 (the first 50)"
        );
        assert!(ReplaySelection::matching(filter(Some(EventState::Stranded)), MAX_REPLAY_EVENTS).is_ok());
        for state in [None, Some(EventState::Handled), Some(EventState::InFlight)] {
            assert_eq!(ReplaySelection::matching(filter(state), 10), Err(SelectionRefused::NotReplayable));
        }
        for limit in [0, MAX_REPLAY_EVENTS + 1] {
            assert_eq!(
                ReplaySelection::matching(filter(Some(EventState::Failed)), limit),
                Err(SelectionRefused::Limit)
            );
        }
    }

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

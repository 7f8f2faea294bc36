//! Receipts: the durable record that a numbered event was claimed, and what became of it.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::ValidationError;
use super::{AttemptRecord, ExternalEventId, Label, Platform, TenantId};

/// What identifies a receipt. Uniqueness is tenant-local (decision 4): the same event id
/// under two tenants is two receipts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReceiptKey {
    pub tenant: TenantId,
    pub platform: Platform,
    pub external_id: ExternalEventId,
}

super::ids::uuid_id!(
    /// One delivery's claim: stored with the receipt it makes, so a claim whose commit was
    /// never confirmed can be recognised later as this delivery's own (or another's).
    ClaimId,
    "claim id"
);

/// A claim about to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReceipt {
    pub key: ReceiptKey,
    /// Which delivery claims: a claim sent again with the same id is the same claim.
    pub claim: ClaimId,
    pub event_type: Label,
    /// The delivery attempt the claim was made on (a hint; see `Delivery`).
    pub attempt: u32,
    pub claimed_at: DateTime<Utc>,
    /// The payload, kept with the claim (sealed) until the event is handled, when the tenant
    /// retains payloads for replay; `None` otherwise.
    pub retained: Option<super::Payload>,
}

/// The answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This delivery owns the event: it, and only it, dispatches.
    Claimed,
    /// Another delivery claimed the event first: do nothing.
    Duplicate,
}

/// Why a dispatch failed, and when; stored on the receipt so it can be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// What completing a receipt did besides marking it handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Completion {
    /// Expired receipts of the same tenant deleted in the same transaction.
    pub pruned: u64,
}

/// A stored receipt, as operator commands list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub key: ReceiptKey,
    pub event_type: String,
    pub attempt: u32,
    pub claimed_at: DateTime<Utc>,
    /// Set once the agent accepted the dispatch. A receipt claimed long ago with neither
    /// this nor a failure is a *stranded* event: real, acknowledged, and delivered to nobody.
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<Failure>,
    /// How many times an operator replayed it.
    pub replays: u32,
    /// How many redeliveries of it were taken (its tenant's redelivery, ADR 26).
    pub redeliveries: u32,
    /// When its spent redelivery schedule was given up: it stays failed for good.
    pub gave_up_at: Option<DateTime<Utc>>,
    /// Doorman's own dispatch the agent took (the live one, or a redelivery): when it started
    /// and the agent's status (kept with the completion; `None` for one completed before
    /// attempts were recorded).
    pub first_delivery: Option<FirstDelivery>,
}

/// The first dispatch of an event, when the agent took it, as its receipt keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstDelivery {
    pub started_at: DateTime<Utc>,
    pub status: u16,
}

/// What became of a claimed event, as `doorman receipts show` and the admin API say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptStatus {
    /// The agent took it, at `at`.
    Handled { at: DateTime<Utc> },
    /// Its last dispatch failed and it is not handled.
    Failed(Failure),
    /// Claimed recently, neither handled nor failed: its dispatch may still be running.
    InFlight,
    /// Claimed longer ago than the threshold, never handled, no failure: acknowledged to the
    /// platform and delivered to nobody (decision 3).
    Stranded,
}

impl ReceiptStatus {
    /// How long an unfinished receipt is in flight before it reads as stranded, unless an
    /// operator asks otherwise: twice Slack's ~5-minute retry window.
    pub const STRANDED_AFTER: Duration = Duration::from_secs(10 * 60);

    /// The stable word for reports, `--json` and the admin API.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Handled { .. } => "handled",
            Self::Failed(_) => "failed",
            Self::InFlight => "in_flight",
            Self::Stranded => "stranded",
        }
    }
}

/// A stored receipt, and whether its event's payload is kept (for a replay).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRecord {
    pub receipt: Receipt,
    pub payload_kept: bool,
}

/// Which events an operator lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventState {
    /// The agent took them; newest claim first.
    Handled,
    /// The last dispatch failed and they are not handled; newest failure first.
    Failed,
    /// Claimed recently, neither handled nor failed (their dispatch may be running); oldest
    /// first.
    InFlight,
    /// Acknowledged, never handled, no failure, claimed before a threshold; oldest first.
    Stranded,
}

impl EventState {
    pub const ALL: [Self; 4] = [Self::Handled, Self::Failed, Self::InFlight, Self::Stranded];

    pub fn parse(word: &str) -> Result<Self, ValidationError> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == word)
            .ok_or_else(|| ValidationError::new("state", "must be handled, failed, in_flight or stranded"))
    }

    /// The word of the API and the command line (the same as [`ReceiptStatus::as_str`]).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Handled => "handled",
            Self::Failed => "failed",
            Self::InFlight => "in_flight",
            Self::Stranded => "stranded",
        }
    }
}

/// A listing of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFilter {
    /// `None`: events in every state, newest claim first.
    pub state: Option<EventState>,
    /// At or after this: the last failure's time for `Failed`, the claim's for the others.
    pub since: Option<DateTime<Utc>>,
    /// Before this, likewise.
    pub until: Option<DateTime<Utc>>,
    /// Only events of this type (`app_mention`, `message`, …).
    pub event_type: Option<String>,
    /// An unfinished receipt claimed before this is stranded, after it in flight.
    pub stranded_before: DateTime<Utc>,
}

/// What became of one event: its receipt, its status now, whether its payload is kept, and
/// (when read one at a time) each dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventReport {
    pub receipt: Receipt,
    pub status: ReceiptStatus,
    pub payload_kept: bool,
    /// The live dispatch, then each replay, oldest first (empty in listings).
    pub attempts: Vec<Attempt>,
}

/// A receipt found by its event id across tenants, with its tenant's name (the search of
/// support staff, who know an event's id before its tenant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundReceipt {
    pub tenant_name: String,
    pub receipt: Receipt,
}

/// An event found by its id: its tenant (id in the receipt's key, and name), its receipt and
/// its status now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMatch {
    pub tenant_name: String,
    pub receipt: Receipt,
    pub status: ReceiptStatus,
}

/// One dispatch of an event: Doorman's own (the live one, after its claim), or an operator's
/// replay; with what the agent answered, when it is on record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// An operator's replay; else Doorman's own dispatch.
    pub replay: bool,
    /// Doorman's own dispatch after the live one: one of the tenant's redeliveries.
    pub redelivery: bool,
    /// The replay job it was part of, if any.
    pub job: Option<super::ReplayJobId>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The live dispatch: `handled`, `failed`, `in_flight` or `stranded`; a replay: its
    /// outcome word (`handled`, `failed`, `no_payload`, …), or `running`.
    pub outcome: String,
    pub detail: Option<String>,
    /// What the agent answered, when the attempt is on record (every one since attempts were
    /// recorded, but a replay that sent nothing).
    pub answer: Option<AttemptAnswer>,
}

/// What an agent answered one attempt, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptAnswer {
    /// The agent's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Why it did not end in a 2xx.
    pub failure: Option<super::FailureKind>,
    pub latency_ms: i64,
    /// The first KiB of the agent's answer body (failures only).
    pub body: Option<String>,
}

impl From<&AttemptRecord> for AttemptAnswer {
    fn from(record: &AttemptRecord) -> Self {
        Self {
            status: record.status,
            failure: record.failure,
            latency_ms: record.latency_ms(),
            body: record.answer.clone(),
        }
    }
}

impl Attempt {
    /// An event's dispatches, oldest first, from its receipt, its replay jobs and the attempts
    /// on record. Doorman's own dispatch is the receipt's first delivery and every failed
    /// attempt on record that was not a replay; an event with neither (in flight, stranded,
    /// or finished before attempts were recorded) shows the one the receipt tells of. Each
    /// replay job's replay carries the recorded attempt made while it ran; a recorded replay
    /// no job ran (`doorman receipts replay`) is a replay of its own.
    pub fn history(
        receipt: &Receipt,
        status: &ReceiptStatus,
        replays: Vec<super::ReplayAttempt>,
        recorded: &[AttemptRecord],
    ) -> Vec<Self> {
        let mut attempts = Vec::new();
        let own: Vec<&AttemptRecord> = recorded.iter().filter(|r| !r.replay).collect();
        if let Some(first) = receipt.first_delivery {
            let ended_at = receipt.handled_at;
            attempts.push(Self {
                replay: false,
                redelivery: false,
                job: None,
                started_at: Some(first.started_at),
                ended_at,
                outcome: "handled".into(),
                detail: None,
                answer: Some(AttemptAnswer {
                    status: Some(first.status),
                    failure: None,
                    latency_ms: ended_at.map_or(0, |at| (at - first.started_at).num_milliseconds().max(0)),
                    body: None,
                }),
            });
        }
        attempts.extend(own.iter().map(|record| Self::recorded(record, None, "failed")));
        if attempts.is_empty() {
            attempts.push(Self::told_by_the_receipt(receipt, status, &replays));
        }
        // Doorman's own attempts after the first are the tenant's redeliveries. (A live
        // dispatch that never finished leaves no record: its first redelivery then reads as
        // the first attempt.)
        if receipt.redeliveries > 0 {
            attempts.sort_by_key(|attempt| attempt.started_at);
            for attempt in attempts.iter_mut().skip(1) {
                attempt.redelivery = true;
            }
        }
        let mut replayed: Vec<&AttemptRecord> = recorded.iter().filter(|r| r.replay).collect();
        for replay in replays {
            let ran = |record: &&AttemptRecord| {
                replay.started_at.is_some_and(|from| record.started_at >= from)
                    && replay.ended_at.is_none_or(|to| record.started_at <= to)
            };
            let outcome = replay.outcome.unwrap_or_else(|| "running".into());
            match replayed.iter().position(ran) {
                Some(at) => {
                    let record = replayed.remove(at);
                    attempts.push(Self {
                        detail: replay.detail,
                        ..Self::recorded(record, Some(replay.job), &outcome)
                    });
                }
                None => attempts.push(Self {
                    replay: true,
                    redelivery: false,
                    job: Some(replay.job),
                    started_at: replay.started_at,
                    ended_at: replay.ended_at,
                    outcome,
                    detail: replay.detail,
                    answer: None,
                }),
            }
        }
        attempts.extend(replayed.into_iter().map(|record| {
            let outcome = if record.failure.is_some() { "failed" } else { "handled" };
            Self::recorded(record, None, outcome)
        }));
        attempts.sort_by_key(|attempt| attempt.started_at);
        attempts
    }

    fn recorded(record: &AttemptRecord, job: Option<super::ReplayJobId>, outcome: &str) -> Self {
        Self {
            replay: record.replay,
            redelivery: false,
            job,
            started_at: Some(record.started_at),
            ended_at: Some(record.ended_at),
            outcome: outcome.to_owned(),
            detail: record.reason.clone(),
            answer: Some(record.into()),
        }
    }

    /// Doorman's own dispatch as the receipt tells of it, with nothing on record: its
    /// outcome until a replay came; after one, what the first replay found (the receipt's
    /// failure then, or none: acknowledged and unfinished).
    fn told_by_the_receipt(
        receipt: &Receipt,
        status: &ReceiptStatus,
        replays: &[super::ReplayAttempt],
    ) -> Self {
        let replay_handled =
            replays.iter().any(|r| matches!(r.outcome.as_deref(), Some("handled" | "handled_unrecorded")));
        let live_failure = |failure: &Failure| (Some(failure.at), "failed", Some(failure.reason.clone()));
        let (ended_at, outcome, detail) = match (receipt.handled_at, replays.first()) {
            (Some(at), _) if !replay_handled => (Some(at), "handled", None),
            (_, None) => match status {
                ReceiptStatus::Handled { at } => (Some(*at), "handled", None),
                ReceiptStatus::Failed(failure) => live_failure(failure),
                ReceiptStatus::InFlight => (None, "in_flight", None),
                ReceiptStatus::Stranded => (None, "stranded", None),
            },
            (_, Some(first)) => match &first.failure_before {
                Some(failure) => live_failure(failure),
                None => {
                    (None, "stranded", Some("acknowledged and never finished before its first replay".into()))
                }
            },
        };
        Self {
            replay: false,
            redelivery: false,
            job: None,
            started_at: Some(receipt.claimed_at),
            ended_at,
            outcome: outcome.to_owned(),
            detail,
            answer: None,
        }
    }
}

impl Receipt {
    /// The receipt's status at `now`, stranded once unfinished for longer than `stranded_after`.
    pub fn status(&self, now: DateTime<Utc>, stranded_after: Duration) -> ReceiptStatus {
        match (&self.handled_at, &self.failure) {
            (Some(at), _) => ReceiptStatus::Handled { at: *at },
            (None, Some(failure)) => ReceiptStatus::Failed(failure.clone()),
            (None, None) => {
                let threshold = chrono::Duration::from_std(stranded_after).unwrap_or(chrono::Duration::MAX);
                if now - self.claimed_at > threshold {
                    ReceiptStatus::Stranded
                } else {
                    ReceiptStatus::InFlight
                }
            }
        }
    }

    /// Dispatches attempted: the live one and each replay.
    pub fn dispatches(&self) -> u32 {
        1 + self.replays + self.redeliveries
    }
}

/// How long receipts are kept, and how many expired ones one completion may delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    keep_for: Duration,
    prune_batch: u32,
}

impl Retention {
    /// How long receipts are kept unless configured otherwise: a week.
    pub const DEFAULT_KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);

    /// The shortest retention allowed. Slack retries for about five minutes after the first
    /// attempt; a receipt pruned before that would let a late retry dispatch a second time.
    pub const MINIMUM: Duration = Duration::from_secs(10 * 60);

    pub fn new(keep_for: Duration, prune_batch: u32) -> Result<Self, ValidationError> {
        if keep_for < Self::MINIMUM {
            return Err(ValidationError::new(
                "receipt retention",
                "is shorter than 10 minutes, inside Slack's retry window",
            ));
        }
        if prune_batch == 0 {
            return Err(ValidationError::new("prune batch", "is zero"));
        }
        Ok(Self { keep_for, prune_batch })
    }

    pub fn keep_for(&self) -> Duration {
        self.keep_for
    }

    pub fn prune_batch(&self) -> u32 {
        self.prune_batch
    }

    /// Receipts claimed before this instant have expired.
    pub fn expiry_cutoff(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        // `keep_for` comes from configuration; saturate rather than panic on absurd values.
        chrono::Duration::from_std(self.keep_for)
            .ok()
            .and_then(|d| now.checked_sub_signed(d))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_reads_as_handled_failed_in_flight_or_stranded() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let ten_minutes = Duration::from_secs(600);
        let receipt = |claimed_ago: i64, handled: bool, failed: bool| Receipt {
            key: ReceiptKey {
                tenant: TenantId::generate(),
                platform: Platform::Slack,
                external_id: ExternalEventId::new("Ev1").unwrap(),
            },
            event_type: "app_mention".into(),
            attempt: 1,
            claimed_at: now - chrono::Duration::seconds(claimed_ago),
            handled_at: handled.then_some(now),
            failure: failed.then(|| Failure { reason: "agent answered HTTP 500".into(), at: now }),
            replays: 2,
            redeliveries: 0,
            gave_up_at: None,
            first_delivery: None,
        };
        assert_eq!(
            receipt(5, true, true).status(now, ten_minutes),
            ReceiptStatus::Handled { at: now },
            "a replay handled it"
        );
        assert!(matches!(receipt(5, false, true).status(now, ten_minutes), ReceiptStatus::Failed(_)));
        assert_eq!(receipt(599, false, false).status(now, ten_minutes), ReceiptStatus::InFlight);
        assert_eq!(
            receipt(600, false, false).status(now, ten_minutes),
            ReceiptStatus::InFlight,
            "stranded only once longer than the threshold, as doorman_is_stranded says"
        );
        assert_eq!(receipt(601, false, false).status(now, ten_minutes), ReceiptStatus::Stranded);
        assert_eq!(receipt(5, true, false).dispatches(), 3, "the live dispatch and two replays");
    }

    #[test]
    fn statuses_and_states_use_the_words_of_the_api() {
        let at = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let failure = Failure { reason: "x".into(), at };
        let words = [
            ReceiptStatus::Handled { at }.as_str(),
            ReceiptStatus::Failed(failure).as_str(),
            ReceiptStatus::InFlight.as_str(),
            ReceiptStatus::Stranded.as_str(),
        ];
        assert_eq!(words, ["handled", "failed", "in_flight", "stranded"]);
        for state in EventState::ALL {
            assert_eq!(EventState::parse(state.as_str()).unwrap(), state);
        }
        assert_eq!(EventState::ALL.map(EventState::as_str), words, "the same words as the statuses");
        assert_eq!(EventState::parse("lost").unwrap_err().what, "state");
    }

    #[test]
    fn the_defaults_are_ten_minutes_to_strand_and_a_week_to_keep() {
        assert_eq!(ReceiptStatus::STRANDED_AFTER, Duration::from_secs(600));
        assert_eq!(Retention::DEFAULT_KEEP_FOR, Duration::from_secs(604_800));
        let r = Retention::new(Retention::DEFAULT_KEEP_FOR, 500).unwrap();
        assert_eq!((r.keep_for(), r.prune_batch()), (Duration::from_secs(604_800), 500));
    }

    #[test]
    fn retention_inside_slacks_retry_window_is_refused() {
        assert!(Retention::new(Duration::from_secs(599), 100).is_err());
        assert!(Retention::new(Duration::from_secs(600), 100).is_ok());
        assert!(Retention::new(Duration::from_secs(600), 0).is_err());
    }

    #[test]
    fn the_cutoff_is_now_minus_retention_and_saturates() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let r = Retention::new(Duration::from_secs(3600), 10).unwrap();
        assert_eq!(r.expiry_cutoff(now).timestamp(), 1_000_000 - 3600);
        let huge = Retention::new(Duration::from_secs(u64::MAX), 10).unwrap();
        assert_eq!(huge.expiry_cutoff(now), DateTime::<Utc>::MIN_UTC);
    }
}

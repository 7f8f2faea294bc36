//! Outcomes as a batch sends them: completions (with the tenant's prune) and failures.
//!
//! Outcomes are idempotent: a receipt is marked handled only while `handled_at` is null, and a
//! failure is the same values written again. So one whose batch failed is simply sent again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Bool, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use doorman_domain::{AttemptRecord, ReceiptKey, TenantId};
use uuid::Uuid;

use super::statement::{Kept, bind};

/// A completion or a failure, on its way to the database.
#[derive(Debug, Clone)]
pub(super) struct PendingOutcome {
    pub key: ReceiptKey,
    pub kind: PendingKind,
}

#[derive(Debug, Clone)]
pub(super) enum PendingKind {
    /// The agent took it: handled at `at`, the dispatch started at `started_at` and answered
    /// `status`; a replay's is an attempt row, a first dispatch's rides on the receipt.
    Handled {
        at: DateTime<Utc>,
        started_at: DateTime<Utc>,
        status: u16,
        replay: bool,
        expired_before: DateTime<Utc>,
        prune_batch: u32,
    },
    /// A dispatch failed: the attempt (its reason already cut to what a receipt keeps), whose
    /// reason and end are the receipt's failure.
    Failed(AttemptRecord),
}

impl PendingKind {
    /// The attempt's columns, as the outcome write takes them: start, status, failure word,
    /// answer excerpt and whether it was a replay.
    fn attempt(&self) -> (DateTime<Utc>, Option<i16>, Option<&str>, Option<&str>, bool) {
        match self {
            Self::Handled { started_at, status, replay, .. } => {
                (*started_at, Some(status_column(*status)), None, None, *replay)
            }
            Self::Failed(attempt) => (
                attempt.started_at,
                attempt.status.map(status_column),
                attempt.failure.map(|kind| kind.as_str()),
                attempt.answer.as_deref(),
                attempt.replay,
            ),
        }
    }
}

/// An HTTP status as the `smallint` column holds it (every status is three digits).
pub(super) fn status_column(status: u16) -> i16 {
    i16::try_from(status).unwrap_or(i16::MAX)
}

/// How often the server's completions prune a tenant's expired receipts.
pub const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// Which tenants a batch's completions prune (decision 8: in a completion's transaction, off
/// the claim's path): each at most once per `every` in this process. A busy tenant completes
/// many batches a second and its receipts expire at the rate they arrive, so a prune of up to
/// the prune batch a second keeps up with up to that many events a second per process, and
/// the other batches skip the prune's statements.
#[derive(Debug)]
pub(super) struct PruneSchedule {
    every: Duration,
    last: Mutex<HashMap<TenantId, Instant>>,
}

impl PruneSchedule {
    /// The most tenants remembered; past it the memory starts over (a tenant then prunes once
    /// more than it needed to).
    const MAX_TENANTS: usize = 100_000;

    pub(super) fn new(every: Duration) -> Self {
        Self { every, last: Mutex::default() }
    }

    /// Whether `tenant` prunes at `now`; if so, this is its prune.
    fn take(&self, tenant: TenantId, now: Instant) -> bool {
        if self.every.is_zero() {
            return true;
        }
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if last.get(&tenant).is_some_and(|at| now.saturating_duration_since(*at) < self.every) {
            return false;
        }
        if last.len() >= Self::MAX_TENANTS {
            last.clear();
        }
        last.insert(tenant, now);
        true
    }
}

/// The batch's outcomes as `doorman_record_outcomes` takes them. Each tenant with a completion
/// in the batch prunes once, when `prune` says it is its turn.
pub(super) struct OutcomeRows<'a> {
    tenants: Vec<Uuid>,
    platforms: Vec<&'a str>,
    event_ids: Vec<&'a str>,
    handled_at: Vec<Option<DateTime<Utc>>>,
    reasons: Vec<Option<&'a str>>,
    failed_at: Vec<Option<DateTime<Utc>>>,
    started_at: Vec<DateTime<Utc>>,
    statuses: Vec<Option<i16>>,
    /// These three are `None` (sent as NULL) for a batch of first deliveries only, the hot
    /// path without failures: nothing of them to send.
    failures: Option<Vec<Option<&'a str>>>,
    answers: Option<Vec<Option<&'a str>>>,
    replays: Option<Vec<bool>>,
    prune_tenants: Vec<Uuid>,
    expired_before: Option<DateTime<Utc>>,
    prune_batch: Option<i64>,
}

impl<'a> OutcomeRows<'a> {
    pub(super) fn of(batch: &[&'a PendingOutcome], prune: Option<&PruneSchedule>) -> Self {
        let now = Instant::now();
        let mut rows = Self {
            tenants: batch.iter().map(|o| *o.key.tenant.as_uuid()).collect(),
            platforms: batch.iter().map(|o| o.key.platform.as_str()).collect(),
            event_ids: batch.iter().map(|o| o.key.external_id.as_str()).collect(),
            handled_at: Vec::with_capacity(batch.len()),
            reasons: Vec::with_capacity(batch.len()),
            failed_at: Vec::with_capacity(batch.len()),
            started_at: Vec::with_capacity(batch.len()),
            statuses: Vec::with_capacity(batch.len()),
            failures: None,
            answers: None,
            replays: None,
            prune_tenants: Vec::new(),
            expired_before: None,
            prune_batch: None,
        };
        // Every completion of a process uses the same retention: the earliest cutoff and the
        // smallest batch of the group are the ones every request agrees to.
        let (mut failures, mut answers, mut replays) = (Vec::new(), Vec::new(), Vec::new());
        for outcome in batch {
            let (started_at, status, failure, answer, replay) = outcome.kind.attempt();
            rows.started_at.push(started_at);
            rows.statuses.push(status);
            failures.push(failure);
            answers.push(answer);
            replays.push(replay);
            match &outcome.kind {
                PendingKind::Handled { at, expired_before: cutoff, prune_batch: limit, .. } => {
                    rows.handled_at.push(Some(*at));
                    rows.reasons.push(None);
                    rows.failed_at.push(None);
                    rows.expired_before = Some(rows.expired_before.map_or(*cutoff, |e| e.min(*cutoff)));
                    let limit = i64::from(*limit);
                    rows.prune_batch = Some(rows.prune_batch.map_or(limit, |p| p.min(limit)));
                    let tenant = outcome.key.tenant;
                    if let Some(schedule) = prune
                        && !rows.prune_tenants.contains(tenant.as_uuid())
                        && schedule.take(tenant, now)
                    {
                        rows.prune_tenants.push(*tenant.as_uuid());
                    }
                }
                PendingKind::Failed(attempt) => {
                    rows.handled_at.push(None);
                    rows.reasons.push(attempt.reason.as_deref());
                    rows.failed_at.push(Some(attempt.ended_at));
                }
            }
        }
        if failures.iter().any(Option::is_some) || replays.contains(&true) {
            (rows.failures, rows.answers, rows.replays) = (Some(failures), Some(answers), Some(replays));
        }
        rows
    }

    /// The call that records them, its rows `('outcome', tenant, pruned, NULL)` for each tenant
    /// that pruned.
    pub(super) fn call(&self) -> Kept<'_> {
        Kept::call(
            "SELECT 'outcome'::text AS kind, outcome_tenant AS id, pruned AS n, NULL::text AS signature FROM doorman_record_outcomes",
            vec![
                bind::<Array<SqlUuid>, _>(&self.tenants),
                bind::<Array<Text>, _>(&self.platforms),
                bind::<Array<Text>, _>(&self.event_ids),
                bind::<Array<Nullable<Timestamptz>>, _>(&self.handled_at),
                bind::<Array<Nullable<Text>>, _>(&self.reasons),
                bind::<Array<Nullable<Timestamptz>>, _>(&self.failed_at),
                bind::<Array<Timestamptz>, _>(&self.started_at),
                bind::<Array<Nullable<SmallInt>>, _>(&self.statuses),
                bind::<Nullable<Array<Nullable<Text>>>, _>(&self.failures),
                bind::<Nullable<Array<Nullable<Text>>>, _>(&self.answers),
                bind::<Nullable<Array<Bool>>, _>(&self.replays),
                bind::<Array<SqlUuid>, _>(&self.prune_tenants),
                // Both are null when the batch holds only failures: nothing is pruned then.
                bind::<Nullable<Timestamptz>, _>(&self.expired_before),
                bind::<Nullable<BigInt>, _>(&self.prune_batch),
            ],
        )
    }
}

impl OutcomeRows<'_> {
    /// The tenants that prune with this batch, the cutoff and the most each prunes (both
    /// `None` when the batch holds only failures: nothing is pruned then).
    pub(super) fn prunes(&self) -> (&[Uuid], Option<DateTime<Utc>>, Option<i64>) {
        (&self.prune_tenants, self.expired_before, self.prune_batch)
    }

    /// The outcomes alone, under the tenants the caller's transaction names
    /// (`doorman_write_outcomes`): replays', one tenant at a time.
    pub(super) fn write_call(&self) -> Kept<'_> {
        Kept::call(
            "SELECT 1 AS written FROM doorman_write_outcomes",
            vec![
                bind::<Array<SqlUuid>, _>(&self.tenants),
                bind::<Array<Text>, _>(&self.platforms),
                bind::<Array<Text>, _>(&self.event_ids),
                bind::<Array<Nullable<Timestamptz>>, _>(&self.handled_at),
                bind::<Array<Nullable<Text>>, _>(&self.reasons),
                bind::<Array<Nullable<Timestamptz>>, _>(&self.failed_at),
                bind::<Array<Timestamptz>, _>(&self.started_at),
                bind::<Array<Nullable<SmallInt>>, _>(&self.statuses),
                bind::<Nullable<Array<Nullable<Text>>>, _>(&self.failures),
                bind::<Nullable<Array<Nullable<Text>>>, _>(&self.answers),
                bind::<Nullable<Array<Bool>>, _>(&self.replays),
            ],
        )
    }
}

/// What each outcome reports: a tenant's prune count on its first completion of the batch, 0
/// everywhere else.
pub(super) fn pruned_per_outcome(batch: &[&PendingOutcome], pruned: HashMap<Uuid, u64>) -> Vec<u64> {
    let mut pruned: HashMap<TenantId, u64> =
        pruned.into_iter().map(|(tenant, n)| (TenantId::from_uuid(tenant), n)).collect();
    batch
        .iter()
        .map(|o| match o.kind {
            PendingKind::Handled { .. } => pruned.remove(&o.key.tenant).unwrap_or(0),
            PendingKind::Failed(_) => 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_prunes_at_most_once_per_period_and_every_time_with_no_period() {
        let schedule = PruneSchedule::new(Duration::from_secs(1));
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let t0 = Instant::now();
        assert!(schedule.take(a, t0));
        assert!(!schedule.take(a, t0 + Duration::from_millis(999)));
        assert!(schedule.take(b, t0 + Duration::from_millis(10)), "tenants are apart");
        assert!(schedule.take(a, t0 + Duration::from_secs(1)));
        let always = PruneSchedule::new(Duration::ZERO);
        assert!(always.take(a, t0) && always.take(a, t0));
    }
}

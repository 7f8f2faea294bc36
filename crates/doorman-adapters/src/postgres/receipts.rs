//! The receipt store: claims, unnumbered requests' fingerprints, completions (+ prune) and
//! failures, written in cycles ([`super::cycle`]) by two writers: one for claims and
//! fingerprints, one for outcomes.
//!
//! Concurrent writes share one statement ([`super::group_commit`]): the port's contract is
//! unchanged (a claim returns only once it has committed), but the database commits once per
//! cycle instead of once per event. Each kind is one call of a SECURITY INVOKER function that
//! names every tenant of its rows at once (`app.tenant_ids`, taken from the rows themselves):
//! row-level security then keeps the statement to the tenants of its batch, and guards against
//! a statement that touches others, not against the serving role, which serves every tenant.
//! Replays' outcomes (the admin process, the command line) are written one at a time under the
//! one tenant the caller acts for, so there the check is against the caller's tenant. Claims,
//! and what happens when a claim's commit is never confirmed, are in [`super::claims`].

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{
    AttemptRecord, Claim, Completion, Delivered, Fingerprint, NewReceipt, ReceiptKey, StorageError, TenantId,
};
use tokio::time::Instant;

use crate::secrets::{Keyring, SealedIn};

use super::claims::{ClaimTimeouts, SealedClaim};
use super::cycle::{self, CycleSettings, Write, Written};
use super::directory::PAYLOAD_COLUMN;
use super::errors::from_diesel;
use super::group_commit::{GroupSettings, Writer};
use super::outcomes::{OutcomeRows, PRUNE_EVERY, PendingKind, PendingOutcome, PruneSchedule};
use super::placements::{NodeWrites, PlacedWriters, Placements, WriterOn};
use super::pool::PgPool;

/// The longest failure reason stored; the rest is cut (the reason is for an operator's eye).
const MAX_FAILURE_REASON: usize = 500;

/// How long a completion or a failure keeps being sent while the database cannot take it:
/// after the answer, with no deadline but this, rather than leave a delivered event looking
/// stranded.
const OUTCOME_PATIENCE: Duration = Duration::from_secs(30);

/// Two writers, each one statement per cycle: claims and fingerprints (what an answer waits
/// for) in one queue, completions and failures in another, each on its own pool in the
/// server. The two cycles overlap: an outcome never makes a claim's statement longer, and on
/// the floor two queues measured 1.1–1.3× one shared queue (ADR 17).
#[derive(Clone)]
pub struct PgReceiptStore {
    claims: Arc<PlacedWriters<Write, Written>>,
    outcomes: Outcomes,
    keys: Arc<Keyring>,
    timeouts: ClaimTimeouts,
}

/// Where completions and failures go.
#[derive(Clone)]
enum Outcomes {
    /// The server's: across tenants, one statement per cycle (`doorman_record_outcomes`).
    Batched(Arc<PlacedWriters<Write, Written>>),
    /// Replays': each in a transaction that names its one tenant (`app.tenant_id`), written by
    /// `doorman_write_outcomes`, which names none itself. Never prunes.
    PerTenant(PgPool),
}

/// How a store is asked to write outcomes: in batches on a pool (pruning on a schedule, or
/// never), or one at a time per tenant.
enum OutcomesOn {
    Batched(PgPool, Option<Arc<PruneSchedule>>),
    PerTenant(PgPool),
}

impl std::fmt::Debug for PgReceiptStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgReceiptStore")
    }
}

impl PgReceiptStore {
    /// Writes on `pool`. Starts the writers on the current runtime. `keys` seal the payloads
    /// retaining tenants keep with their claims. Every completion prunes its tenant (the
    /// server's prune at most once a second: [`PgReceiptStore::with_pools`]).
    pub fn new(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self::with_settings(pool, keys, GroupSettings::default(), ClaimTimeouts::default())
    }

    /// As the server has it: claims on the acknowledgement pool, completions and failures on
    /// `outcomes` (the background pool). Through a transaction pooler, the two writers sharing
    /// one pool let completions fall behind under load until tenants reached their bound of
    /// work in flight (503 busy, `pooler` e2e test); on pools of their own they keep up. A
    /// tenant's completions prune at most once per [`PRUNE_EVERY`].
    pub fn with_pools(claims: PgPool, outcomes: PgPool, keys: Arc<Keyring>) -> Self {
        let prune = Some(Arc::new(PruneSchedule::new(PRUNE_EVERY)));
        Self::build(
            claims,
            OutcomesOn::Batched(outcomes, prune),
            keys,
            GroupSettings::default(),
            ClaimTimeouts::default(),
        )
    }

    /// For replays outside the server (as `doorman_admin`): completions record their outcome
    /// and never prune. Pruning is the server's (opportunistic, decision 8) and `receipts
    /// prune`'s, and the admin role may not delete receipts.
    pub fn for_replays(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self::build(
            pool.clone(),
            OutcomesOn::PerTenant(pool),
            keys,
            GroupSettings::default(),
            ClaimTimeouts::default(),
        )
    }

    pub fn with_settings(
        pool: PgPool,
        keys: Arc<Keyring>,
        settings: GroupSettings,
        timeouts: ClaimTimeouts,
    ) -> Self {
        let prune = Some(Arc::new(PruneSchedule::new(Duration::ZERO)));
        Self::build(pool.clone(), OutcomesOn::Batched(pool, prune), keys, settings, timeouts)
    }

    fn build(
        claims: PgPool,
        outcomes: OutcomesOn,
        keys: Arc<Keyring>,
        settings: GroupSettings,
        timeouts: ClaimTimeouts,
    ) -> Self {
        // Both kinds of writer learn where tenants' rows are (on Citus) from the same map.
        let placements = Arc::new(Placements::default());
        let writers_on = |name, pool: PgPool, prune: Option<Arc<PruneSchedule>>| {
            let on = pool.clone();
            let write_on: WriterOn<Write, Written> = Arc::new(move |node: Option<NodeWrites>| {
                let cycle =
                    CycleSettings { confirm_within: timeouts.confirm_within, prune: prune.clone(), node };
                let on = on.clone();
                let write: Writer<Write, Written> = Arc::new(move |batch, answer_by| {
                    Box::pin(cycle::write(on.clone(), batch, cycle.clone(), answer_by))
                });
                write
            });
            Arc::new(PlacedWriters::start(name, pool, settings, write_on, placements.clone()))
        };
        let outcomes = match outcomes {
            OutcomesOn::Batched(pool, prune) => Outcomes::Batched(writers_on("outcome", pool, prune)),
            OutcomesOn::PerTenant(pool) => Outcomes::PerTenant(pool),
        };
        Self { claims: writers_on("claim", claims, None), outcomes, keys, timeouts }
    }

    /// The claim as the writer takes it: its payload sealed here, on the caller's task, so the
    /// writer never waits on crypto.
    fn sealed(&self, receipt: &NewReceipt, settle: bool) -> Write {
        let payload = receipt.retained.as_ref().map(|payload| {
            let place = SealedIn { tenant: receipt.key.tenant, column: PAYLOAD_COLUMN };
            self.keys.seal(payload.as_json_text().as_bytes(), place)
        });
        Write::Claim(SealedClaim { receipt: receipt.clone(), payload, settle })
    }

    /// A claim or a fingerprint, within the claims' time.
    async fn claim_within(&self, write: Write) -> Result<Claim, StorageError> {
        let started = Instant::now();
        // Claims settled after their answer, or made long ago, need what only the coordinator
        // holds (the sweep's watermark): its writer, not the node's, which they would also hold
        // up while the node is down.
        let writer = if write.needs_the_coordinator() {
            self.claims.through_the_coordinator()
        } else {
            self.claims.writer_for(write.tenant()).await
        };
        let within = self.timeouts.confirm_within.saturating_sub(started.elapsed());
        match writer.submit_within(write, within).await? {
            Written::Claim(claim) => Ok(claim),
            Written::Unconfirmed(error) | Written::Refused(error) => Err(error),
            Written::Outcome(_) => {
                Err(StorageError::Unexpected("the writer answered a claim as an outcome".into()))
            }
        }
    }

    /// Sends `outcome` until it is written, for at most [`OUTCOME_PATIENCE`]: it is idempotent.
    async fn outcome(&self, outcome: PendingOutcome) -> Result<u64, StorageError> {
        let mut backoff = Backoff::new(OUTCOME_PATIENCE, Duration::from_millis(50), Duration::from_secs(2));
        loop {
            let written = match &self.outcomes {
                Outcomes::Batched(writers) => match writers
                    .writer_for(outcome.key.tenant)
                    .await
                    .submit(Write::Outcome(outcome.clone()))
                    .await
                {
                    Ok(Written::Outcome(pruned)) => Ok(pruned),
                    Ok(Written::Refused(error)) => Err(error),
                    Ok(_) => {
                        return Err(StorageError::Unexpected(
                            "the writer answered an outcome as a claim".into(),
                        ));
                    }
                    Err(error) => Err(error),
                },
                Outcomes::PerTenant(pool) => write_for_its_tenant(pool, &outcome).await.map(|()| 0),
            };
            match written {
                Ok(pruned) => return Ok(pruned),
                Err(error) if backoff.exhausted() => return Err(error),
                Err(error) => {
                    tracing::warn!(tenant.id = %outcome.key.tenant, event.id = %outcome.key.external_id, error = %error, "an outcome could not be written; sending it again");
                    backoff.wait().await;
                }
            }
        }
    }
}

/// One outcome in a transaction that names its tenant: row-level security checks its row
/// against that tenant.
async fn write_for_its_tenant(pool: &PgPool, outcome: &PendingOutcome) -> Result<(), StorageError> {
    let rows = OutcomeRows::of(&[outcome], None);
    let mut unit = pool.unit().await?;
    let written = unit
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            super::pool::act_for(conn, outcome.key.tenant).await?;
            rows.write_call().execute(conn).await.map(drop)
        })
        .await
        .map_err(from_diesel);
    unit.finish(written).await
}

/// Pauses between tries of something idempotent: doubling up to a cap, while a try after the
/// next pause would still come before the deadline.
struct Backoff {
    give_up: Instant,
    pause: Duration,
    max: Duration,
}

impl Backoff {
    fn new(patience: Duration, first: Duration, max: Duration) -> Self {
        Self { give_up: Instant::now() + patience, pause: first, max }
    }

    /// Whether the next try would come too late: the caller gives up with its last error.
    fn exhausted(&self) -> bool {
        Instant::now() + self.pause >= self.give_up
    }

    async fn wait(&mut self) {
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(self.max);
    }
}

impl ReceiptStore for PgReceiptStore {
    /// `INSERT … ON CONFLICT DO NOTHING` for the whole batch, committed before this returns
    /// (decision 2): a row inserted means this delivery owns the event. Answered within
    /// [`ClaimTimeouts::confirm_within`] ([`super::claims`]).
    async fn claim(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        self.claim_within(self.sealed(receipt, false)).await
    }

    /// Sends the claim again as a settle until the database answers, pausing longer each
    /// time (up to 5 s), for at most [`ClaimTimeouts::settle_for`].
    async fn settle(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        let mut backoff =
            Backoff::new(self.timeouts.settle_for, Duration::from_millis(100), Duration::from_secs(5));
        loop {
            match self.claim_within(self.sealed(receipt, true)).await {
                Ok(claim) => return Ok(claim),
                Err(error) if backoff.exhausted() => return Err(error),
                Err(error) => {
                    tracing::debug!(event.id = %receipt.key.external_id, error = %error, "settling a claim: the store cannot answer yet");
                    backoff.wait().await;
                }
            }
        }
    }

    /// Records the fingerprint in the same cycles as the claims (`doorman_claim_requests`).
    async fn claim_request(
        &self,
        tenant: TenantId,
        fingerprint: &Fingerprint,
    ) -> Result<Claim, StorageError> {
        self.claim_within(Write::Request(tenant, fingerprint.clone())).await
    }

    /// Sets `handled_at` (once) with the dispatch's start and status; the tenant's expired
    /// receipts are pruned once per batch, at most `prune_batch` of them, in the same
    /// transaction (decision 8).
    async fn complete(
        &self,
        key: &ReceiptKey,
        delivered: &Delivered,
        expired_before: DateTime<Utc>,
        prune_batch: u32,
    ) -> Result<Completion, StorageError> {
        let outcome = PendingOutcome {
            key: key.clone(),
            kind: PendingKind::Handled {
                at: delivered.ended_at,
                started_at: delivered.started_at,
                status: delivered.status,
                replay: delivered.replay,
                expired_before,
                prune_batch,
            },
        };
        Ok(Completion { pruned: self.outcome(outcome).await? })
    }

    async fn record_failure(&self, key: &ReceiptKey, attempt: &AttemptRecord) -> Result<(), StorageError> {
        let mut attempt = attempt.clone();
        // The receipt's failure is whole (a reason with its time): one without a reason says
        // what kind of failure it was.
        let reason = attempt
            .reason
            .take()
            .unwrap_or_else(|| attempt.failure.map_or("failed", |kind| kind.as_str()).to_owned());
        attempt.reason = Some(reason.chars().take(MAX_FAILURE_REASON).collect());
        let outcome = PendingOutcome { key: key.clone(), kind: PendingKind::Failed(attempt) };
        self.outcome(outcome).await.map(drop)
    }
}

/// Every tenant's stranded and recently failed receipts, for the server's gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, diesel::QueryableByName)]
pub struct ReceiptCounts {
    /// Claimed before the threshold, never handled, no failure.
    #[diesel(sql_type = BigInt)]
    pub stranded: i64,
    /// Unhandled, last dispatch failed since the window's start.
    #[diesel(sql_type = BigInt)]
    pub failed_recent: i64,
}

/// Counts across tenants through `doorman_receipt_counts` (SECURITY DEFINER: two numbers,
/// nothing else), which reads only the partial index of unhandled receipts.
pub async fn receipt_counts(
    pool: &PgPool,
    stranded_before: DateTime<Utc>,
    failed_since: DateTime<Utc>,
) -> Result<ReceiptCounts, StorageError> {
    let mut unit = pool.unit().await?;
    let counts = diesel::sql_query("SELECT * FROM doorman_receipt_counts($1, $2)")
        .bind::<Timestamptz, _>(stranded_before)
        .bind::<Timestamptz, _>(failed_since)
        .get_result(&mut unit)
        .await
        .map_err(from_diesel);
    unit.finish(counts).await
}

//! The receipt store: claim, complete (+ prune), record a failure, each in groups.
//!
//! Concurrent claims share one transaction, and so do concurrent completions and failures
//! ([`super::group_commit`]): the port's contract is unchanged (a claim returns only once
//! it has committed), but the database commits once per batch instead of once per event. Each
//! batch is one call of a SECURITY INVOKER function (migration `group_commit…`): one
//! statement, so one transaction of its own, committed when the call returns, in one round
//! trip (an explicit BEGIN/COMMIT measured 25% slower at 8 connections). The function names
//! each tenant of the batch with
//! `set_config('app.tenant_id', …, true)` before touching its rows, so row-level security
//! applies row by row. Claims, and what happens when a claim's commit is never confirmed,
//! are in [`super::claims`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{
    Claim, Completion, Failure, Fingerprint, NewReceipt, ReceiptKey, StorageError, TenantId,
};
use uuid::Uuid;

use crate::secrets::{Keyring, SealedIn};

use super::claims::{self, ClaimTimeouts, SealedClaim};
use super::directory::PAYLOAD_COLUMN;
use super::errors::{from_diesel, is_dead_connection};
use super::group_commit::{GroupCommit, GroupSettings, Writer};
use super::pool::PgPool;

/// The longest failure reason stored; the rest is cut (the reason is for an operator's eye).
const MAX_FAILURE_REASON: usize = 500;

/// Claims run on the acknowledgement pool; completions and failures, which happen after the
/// answer and have no deadline, on a pool of their own, so a burst of completions never
/// makes a delivery wait for a connection inside Slack's 3 seconds.
#[derive(Clone)]
pub struct PgReceiptStore {
    claims: GroupCommit<SealedClaim, Claim>,
    timeouts: ClaimTimeouts,
    keys: Arc<Keyring>,
    requests: GroupCommit<(TenantId, Fingerprint), Claim>,
    outcomes: GroupCommit<PendingOutcome, u64>,
}

impl std::fmt::Debug for PgReceiptStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgReceiptStore")
    }
}

impl PgReceiptStore {
    /// Claims on `claims`; completions and failures on `completions`. Starts the batch
    /// writers on the current runtime.
    /// `keys` seal the payloads retaining tenants keep with their claims.
    pub fn with_pools(claims: PgPool, completions: PgPool, keys: Arc<Keyring>) -> Self {
        Self::with_settings(claims, completions, keys, GroupSettings::default(), ClaimTimeouts::default())
    }

    /// For replays outside the server (as `doorman_admin`): completions record their outcome
    /// and never prune. Pruning is the server's (opportunistic, decision 8) and `receipts
    /// prune`'s, and the admin role may not delete receipts.
    pub fn for_replays(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self::build(pool.clone(), pool, keys, GroupSettings::default(), ClaimTimeouts::default(), false)
    }

    pub fn with_settings(
        claims: PgPool,
        completions: PgPool,
        keys: Arc<Keyring>,
        settings: GroupSettings,
        timeouts: ClaimTimeouts,
    ) -> Self {
        Self::build(claims, completions, keys, settings, timeouts, true)
    }

    fn build(
        claims: PgPool,
        completions: PgPool,
        keys: Arc<Keyring>,
        settings: GroupSettings,
        timeouts: ClaimTimeouts,
        prune: bool,
    ) -> Self {
        let request_pool = claims.clone();
        let request_writer: Writer<(TenantId, Fingerprint), Claim> =
            Arc::new(move |batch| Box::pin(write_requests(request_pool.clone(), batch)));
        let claim_writer: Writer<SealedClaim, Claim> =
            Arc::new(move |batch| Box::pin(claims::write(claims.clone(), batch, timeouts.confirm_within)));
        let outcome_writer: Writer<PendingOutcome, u64> =
            Arc::new(move |batch| Box::pin(write_outcomes(completions.clone(), batch, prune)));
        Self {
            claims: GroupCommit::start("claim", settings, claim_writer),
            requests: GroupCommit::start("request", settings, request_writer),
            outcomes: GroupCommit::start("outcome", settings, outcome_writer),
            keys,
            timeouts,
        }
    }

    /// The claim as the batch writer takes it: its payload sealed here, on the caller's task,
    /// so the one batch writer never waits on crypto.
    fn sealed(&self, receipt: &NewReceipt, settle: bool) -> SealedClaim {
        let payload = receipt.retained.as_ref().map(|payload| {
            let place = SealedIn { tenant: receipt.key.tenant, column: PAYLOAD_COLUMN };
            self.keys.seal(payload.as_json_text().as_bytes(), place)
        });
        SealedClaim { receipt: receipt.clone(), payload, settle }
    }
}

impl ReceiptStore for PgReceiptStore {
    /// `INSERT … ON CONFLICT DO NOTHING` for the whole batch, committed before this returns
    /// (decision 2): a row inserted means this delivery owns the event. Answered within
    /// [`ClaimTimeouts::confirm_within`] ([`claims`]).
    async fn claim(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        self.claims.submit_within(self.sealed(receipt, false), self.timeouts.confirm_within).await
    }

    /// Sends the claim again as a settle until the database answers, pausing longer each
    /// time (up to 5 s), for at most [`ClaimTimeouts::settle_for`].
    async fn settle(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        let give_up = tokio::time::Instant::now() + self.timeouts.settle_for;
        let mut pause = Duration::from_millis(100);
        loop {
            let sealed = self.sealed(receipt, true);
            match self.claims.submit_within(sealed, self.timeouts.confirm_within).await {
                Ok(claim) => return Ok(claim),
                Err(error) if tokio::time::Instant::now() + pause >= give_up => return Err(error),
                Err(error) => {
                    tracing::debug!(event.id = %receipt.key.external_id, error = %error, "settling a claim: the store cannot answer yet");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    /// Records the fingerprint with the claims' pool and batching (`doorman_claim_requests`).
    async fn claim_request(
        &self,
        tenant: TenantId,
        fingerprint: &Fingerprint,
    ) -> Result<Claim, StorageError> {
        self.requests.submit((tenant, fingerprint.clone())).await
    }

    /// Sets `handled_at` (once); the tenant's expired receipts are pruned once per batch, at
    /// most `prune_batch` of them, in the same transaction (decision 8).
    async fn complete(
        &self,
        key: &ReceiptKey,
        handled_at: DateTime<Utc>,
        expired_before: DateTime<Utc>,
        prune_batch: u32,
    ) -> Result<Completion, StorageError> {
        let outcome = PendingOutcome {
            key: key.clone(),
            kind: PendingKind::Handled { at: handled_at, expired_before, prune_batch },
        };
        let pruned = self.outcomes.submit(outcome).await?;
        Ok(Completion { pruned })
    }

    async fn record_failure(&self, key: &ReceiptKey, failure: &Failure) -> Result<(), StorageError> {
        let reason: String = failure.reason.chars().take(MAX_FAILURE_REASON).collect();
        let outcome =
            PendingOutcome { key: key.clone(), kind: PendingKind::Failed { reason, at: failure.at } };
        self.outcomes.submit(outcome).await.map(drop)
    }
}

#[derive(diesel::QueryableByName)]
struct ClaimedRequest {
    #[diesel(sql_type = SqlUuid)]
    claimed_tenant: Uuid,
    #[diesel(sql_type = Text)]
    claimed_signature: String,
}

/// Like [`write_claims`], for fingerprints of unnumbered requests.
async fn write_requests(
    pool: PgPool,
    batch: Vec<(TenantId, Fingerprint)>,
) -> Result<Vec<Claim>, StorageError> {
    let mut first_of: HashMap<(TenantId, &str), usize> = HashMap::with_capacity(batch.len());
    let mut unique = Vec::with_capacity(batch.len());
    for (i, (tenant, fingerprint)) in batch.iter().enumerate() {
        if let std::collections::hash_map::Entry::Vacant(slot) =
            first_of.entry((*tenant, fingerprint.signature()))
        {
            slot.insert(i);
            unique.push((tenant, fingerprint));
        }
    }
    let tenants: Vec<Uuid> = unique.iter().map(|(t, _)| *t.as_uuid()).collect();
    let signatures: Vec<&str> = unique.iter().map(|(_, f)| f.signature()).collect();
    let expires_at: Vec<DateTime<Utc>> = unique.iter().map(|(_, f)| f.expires_at()).collect();
    let mut unit = pool.unit().await?;
    let inserted = diesel::sql_query("SELECT * FROM doorman_claim_requests($1, $2, $3)")
        .bind::<Array<SqlUuid>, _>(&tenants)
        .bind::<Array<Text>, _>(&signatures)
        .bind::<Array<Timestamptz>, _>(&expires_at)
        .load::<ClaimedRequest>(&mut unit)
        .await
        .map_err(from_diesel);
    let inserted = unit.finish(inserted).await?;
    let inserted: HashSet<(Uuid, &str)> =
        inserted.iter().map(|r| (r.claimed_tenant, r.claimed_signature.as_str())).collect();
    Ok(batch
        .iter()
        .enumerate()
        .map(|(i, (tenant, fingerprint))| {
            let is_first = first_of.get(&(*tenant, fingerprint.signature())) == Some(&i);
            if is_first && inserted.contains(&(*tenant.as_uuid(), fingerprint.signature())) {
                Claim::Claimed
            } else {
                Claim::Duplicate
            }
        })
        .collect())
}

/// A completion or a failure, on its way to the database.
struct PendingOutcome {
    key: ReceiptKey,
    kind: PendingKind,
}

enum PendingKind {
    Handled { at: DateTime<Utc>, expired_before: DateTime<Utc>, prune_batch: u32 },
    Failed { reason: String, at: DateTime<Utc> },
}

#[derive(diesel::QueryableByName)]
struct PrunedRow {
    #[diesel(sql_type = SqlUuid)]
    outcome_tenant: Uuid,
    #[diesel(sql_type = BigInt)]
    pruned: i64,
}

/// One transaction for the batch. Each tenant with a completion in it prunes once (when
/// `prune`); what it pruned is reported on that tenant's first completion of the batch.
async fn write_outcomes(
    pool: PgPool,
    batch: Vec<PendingOutcome>,
    prune: bool,
) -> Result<Vec<u64>, StorageError> {
    let mut handled_at = Vec::with_capacity(batch.len());
    let mut reasons = Vec::with_capacity(batch.len());
    let mut failed_at = Vec::with_capacity(batch.len());
    let mut prune_tenants: Vec<Uuid> = Vec::new();
    // Every completion of a process uses the same retention: the earliest cutoff and the
    // smallest batch of the group are the ones every request agrees to.
    let (mut expired_before, mut prune_batch) = (None::<DateTime<Utc>>, None::<u32>);
    for outcome in &batch {
        match &outcome.kind {
            PendingKind::Handled { at, expired_before: cutoff, prune_batch: limit } => {
                handled_at.push(Some(*at));
                reasons.push(None);
                failed_at.push(None);
                expired_before = Some(expired_before.map_or(*cutoff, |e| e.min(*cutoff)));
                prune_batch = Some(prune_batch.map_or(*limit, |p| p.min(*limit)));
                if prune && !prune_tenants.contains(outcome.key.tenant.as_uuid()) {
                    prune_tenants.push(*outcome.key.tenant.as_uuid());
                }
            }
            PendingKind::Failed { reason, at } => {
                handled_at.push(None);
                reasons.push(Some(reason.as_str()));
                failed_at.push(Some(*at));
            }
        }
    }
    let tenants: Vec<Uuid> = batch.iter().map(|o| *o.key.tenant.as_uuid()).collect();
    let platforms: Vec<&str> = batch.iter().map(|o| o.key.platform.as_str()).collect();
    let event_ids: Vec<&str> = batch.iter().map(|o| o.key.external_id.as_str()).collect();

    // Outcomes are idempotent: a receipt is marked handled only while `handled_at` is null, and
    // a failure is the same values written again. So a batch that met a connection the database
    // had already closed (a cut or a restart, handed out before the pool noticed) is sent once
    // more on a fresh connection, for which the pool waits, rather than leave delivered events
    // looking stranded.
    let mut retried = false;
    let pruned: Vec<PrunedRow> = loop {
        let mut unit = pool.unit().await?;
        let written =
            diesel::sql_query("SELECT * FROM doorman_record_outcomes($1, $2, $3, $4, $5, $6, $7, $8, $9)")
                .bind::<Array<SqlUuid>, _>(&tenants)
                .bind::<Array<Text>, _>(&platforms)
                .bind::<Array<Text>, _>(&event_ids)
                .bind::<Array<Nullable<Timestamptz>>, _>(&handled_at)
                .bind::<Array<Nullable<Text>>, _>(&reasons)
                .bind::<Array<Nullable<Timestamptz>>, _>(&failed_at)
                .bind::<Array<SqlUuid>, _>(&prune_tenants)
                // Both are null when the batch holds only failures: nothing is pruned then.
                .bind::<Nullable<Timestamptz>, _>(expired_before)
                .bind::<Nullable<BigInt>, _>(prune_batch.map(i64::from))
                .load::<PrunedRow>(&mut unit)
                .await;
        match written {
            // The unit goes with its dead connection.
            Err(error) if !retried && is_dead_connection(&error) => {
                tracing::warn!(error = %error, outcomes = batch.len(), "an outcome batch met a closed connection; sending it again");
                retried = true;
            }
            written => break unit.finish(written.map_err(from_diesel)).await?,
        }
    };
    let mut pruned: HashMap<TenantId, u64> = pruned
        .into_iter()
        .map(|p| (TenantId::from_uuid(p.outcome_tenant), u64::try_from(p.pruned).unwrap_or(0)))
        .collect();
    Ok(batch
        .iter()
        .map(|o| match o.kind {
            PendingKind::Handled { .. } => pruned.remove(&o.key.tenant).unwrap_or(0),
            PendingKind::Failed { .. } => 0,
        })
        .collect())
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

//! The receipt store: claim, complete (+ prune), record a failure.
//!
//! Each operation is one call of a SECURITY INVOKER function (migration
//! `hot_path_functions`) that names its tenant and does its work in the statement's own
//! transaction: one round trip, committed when it returns, under row-level security.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Integer, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{Claim, Completion, Failure, NewReceipt, ReceiptKey, StorageError};

use super::errors::{from_diesel, from_pool};
use super::pool::PgPool;

/// The longest failure reason stored; the rest is cut (the reason is for an operator's eye).
const MAX_FAILURE_REASON: usize = 500;

/// Claims run on the acknowledgement pool; completions and failures, which happen after the
/// answer and have no deadline, on a pool of their own, so a burst of completions never
/// makes a delivery wait for a connection inside Slack's 3 seconds.
#[derive(Debug, Clone)]
pub struct PgReceiptStore {
    claims: PgPool,
    completions: PgPool,
}

impl PgReceiptStore {
    /// Claims on `claims`; completions and failures on `completions`.
    pub fn with_pools(claims: PgPool, completions: PgPool) -> Self {
        Self { claims, completions }
    }
}

#[derive(diesel::QueryableByName)]
struct Claimed {
    #[diesel(sql_type = Bool)]
    claimed: bool,
}

#[derive(diesel::QueryableByName)]
struct Pruned {
    #[diesel(sql_type = BigInt)]
    pruned: i64,
}

impl ReceiptStore for PgReceiptStore {
    /// `INSERT … ON CONFLICT DO NOTHING` in its own transaction, committed before this
    /// returns (decision 2): a row inserted means this delivery owns the event.
    async fn claim(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        let mut conn = self.claims.get().await.map_err(from_pool)?;
        let Claimed { claimed } =
            diesel::sql_query("SELECT doorman_claim_receipt($1, $2, $3, $4, $5, $6) AS claimed")
                .bind::<SqlUuid, _>(*receipt.key.tenant.as_uuid())
                .bind::<Text, _>(receipt.key.platform.as_str())
                .bind::<Text, _>(receipt.key.external_id.as_str())
                .bind::<Text, _>(receipt.event_type.as_str())
                .bind::<Integer, _>(i32::try_from(receipt.attempt).unwrap_or(i32::MAX))
                .bind::<Timestamptz, _>(receipt.claimed_at)
                .get_result(&mut conn)
                .await
                .map_err(from_diesel)?;
        Ok(if claimed { Claim::Claimed } else { Claim::Duplicate })
    }

    /// Sets `handled_at` (once) and deletes at most `prune_batch` of the tenant's receipts
    /// claimed before `expired_before`, in one transaction (decision 8).
    async fn complete(
        &self,
        key: &ReceiptKey,
        handled_at: DateTime<Utc>,
        expired_before: DateTime<Utc>,
        prune_batch: u32,
    ) -> Result<Completion, StorageError> {
        let mut conn = self.completions.get().await.map_err(from_pool)?;
        let Pruned { pruned } =
            diesel::sql_query("SELECT doorman_complete_receipt($1, $2, $3, $4, $5, $6) AS pruned")
                .bind::<SqlUuid, _>(*key.tenant.as_uuid())
                .bind::<Text, _>(key.platform.as_str())
                .bind::<Text, _>(key.external_id.as_str())
                .bind::<Timestamptz, _>(handled_at)
                .bind::<Timestamptz, _>(expired_before)
                .bind::<BigInt, _>(i64::from(prune_batch))
                .get_result(&mut conn)
                .await
                .map_err(from_diesel)?;
        Ok(Completion { pruned: u64::try_from(pruned).unwrap_or(0) })
    }

    async fn record_failure(&self, key: &ReceiptKey, failure: &Failure) -> Result<(), StorageError> {
        let reason: String = failure.reason.chars().take(MAX_FAILURE_REASON).collect();
        let mut conn = self.completions.get().await.map_err(from_pool)?;
        diesel::sql_query("SELECT doorman_record_failure($1, $2, $3, $4, $5)")
            .bind::<SqlUuid, _>(*key.tenant.as_uuid())
            .bind::<Text, _>(key.platform.as_str())
            .bind::<Text, _>(key.external_id.as_str())
            .bind::<Text, _>(&reason)
            .bind::<Timestamptz, _>(failure.at)
            .execute(&mut conn)
            .await
            .map_err(from_diesel)
            .map(drop)
    }
}

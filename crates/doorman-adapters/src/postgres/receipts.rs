//! The receipt store: claim, complete (+ prune), record a failure.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{Claim, Completion, Failure, NewReceipt, ReceiptKey, StorageError};

use super::errors::{from_diesel, from_pool};
use super::pool::PgPool;
use super::schema::messaging_event_receipts as receipts;
use super::tenant_scope::set_tenant;

/// The longest failure reason stored; the rest is cut (the reason is for an operator's eye).
const MAX_FAILURE_REASON: usize = 500;

#[derive(Debug, Clone)]
pub struct PgReceiptStore {
    pool: PgPool,
}

impl PgReceiptStore {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[derive(Insertable)]
#[diesel(table_name = receipts)]
struct NewReceiptRow<'a> {
    tenant_id: uuid::Uuid,
    platform: &'a str,
    external_event_id: &'a str,
    event_type: &'a str,
    delivery_attempt: i32,
    claimed_at: DateTime<Utc>,
}

/// Rows of one receipt key, tenant included (row-level security scopes it a second time).
macro_rules! key_filter {
    ($key:expr) => {
        receipts::tenant_id
            .eq(*$key.tenant.as_uuid())
            .and(receipts::platform.eq($key.platform.as_str()))
            .and(receipts::external_event_id.eq($key.external_id.as_str()))
    };
}

impl ReceiptStore for PgReceiptStore {
    /// `INSERT … ON CONFLICT DO NOTHING RETURNING`, in its own transaction, committed before
    /// this returns (decision 2): a row back means this delivery owns the event.
    async fn claim(&self, receipt: &NewReceipt) -> Result<Claim, StorageError> {
        let row = NewReceiptRow {
            tenant_id: *receipt.key.tenant.as_uuid(),
            platform: receipt.key.platform.as_str(),
            external_event_id: receipt.key.external_id.as_str(),
            event_type: receipt.event_type.as_str(),
            delivery_attempt: i32::try_from(receipt.attempt).unwrap_or(i32::MAX),
            claimed_at: receipt.claimed_at,
        };
        let mut conn = self.pool.get().await.map_err(from_pool)?;
        let inserted: Option<DateTime<Utc>> = conn
            .transaction(async |conn| {
                set_tenant(conn, receipt.key.tenant).await?;
                diesel::insert_into(receipts::table)
                    .values(&row)
                    .on_conflict((receipts::tenant_id, receipts::platform, receipts::external_event_id))
                    .do_nothing()
                    .returning(receipts::claimed_at)
                    .get_result(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel)?;
        Ok(if inserted.is_some() { Claim::Claimed } else { Claim::Duplicate })
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
        let mut conn = self.pool.get().await.map_err(from_pool)?;
        let pruned = conn
            .transaction(async |conn| {
                set_tenant(conn, key.tenant).await?;
                diesel::update(receipts::table)
                    .filter(key_filter!(key))
                    .filter(receipts::handled_at.is_null())
                    .set(receipts::handled_at.eq(handled_at))
                    .execute(conn)
                    .await?;
                diesel::sql_query(PRUNE_TENANT_BATCH)
                    .bind::<SqlUuid, _>(*key.tenant.as_uuid())
                    .bind::<Timestamptz, _>(expired_before)
                    .bind::<BigInt, _>(i64::from(prune_batch))
                    .execute(conn)
                    .await
            })
            .await
            .map_err(from_diesel)?;
        Ok(Completion { pruned: pruned as u64 })
    }

    async fn record_failure(&self, key: &ReceiptKey, failure: &Failure) -> Result<(), StorageError> {
        let reason: String = failure.reason.chars().take(MAX_FAILURE_REASON).collect();
        let mut conn = self.pool.get().await.map_err(from_pool)?;
        conn.transaction(async |conn| {
            set_tenant(conn, key.tenant).await?;
            diesel::update(receipts::table)
                .filter(key_filter!(key))
                .filter(receipts::handled_at.is_null())
                .set((receipts::failure_reason.eq(&reason), receipts::failed_at.eq(failure.at)))
                .execute(conn)
                .await
        })
        .await
        .map_err(from_diesel)
        .map(drop)
    }
}

/// Deletes at most `$3` receipts of tenant `$1` claimed before `$2`. The inner select walks
/// the `(tenant_id, claimed_at)` index; `LIMIT` keeps one completion's transaction short
/// however far behind pruning is.
pub(crate) const PRUNE_TENANT_BATCH: &str = "\
    DELETE FROM messaging_event_receipts \
     WHERE (tenant_id, platform, external_event_id) IN ( \
        SELECT tenant_id, platform, external_event_id FROM messaging_event_receipts \
         WHERE tenant_id = $1 AND claimed_at < $2 \
         LIMIT $3)";

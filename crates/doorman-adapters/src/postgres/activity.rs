//! A serving process's counts of its dispatches, by tenant and hour (issue 42), added to the
//! activity rollup (`messaging_activity_hours`) in one statement per flush
//! (`doorman_add_activity`), never one per event: the hot path only counts in memory.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Integer, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::{ActivityHour, StorageError, TenantId};

use super::errors::from_diesel;
use super::pool::PgPool;

#[derive(Debug, Clone)]
pub struct PgActivity {
    pool: PgPool,
}

impl PgActivity {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Adds each tenant's hour to what is counted already (another process's, an earlier
    /// flush's), and drops those tenants' hours before `keep_after`. Nothing to add: no
    /// statement.
    pub async fn add(
        &self,
        counts: &[(TenantId, ActivityHour)],
        keep_after: DateTime<Utc>,
    ) -> Result<(), StorageError> {
        if counts.is_empty() {
            return Ok(());
        }
        let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let tenants: Vec<uuid::Uuid> = counts.iter().map(|(tenant, _)| *tenant.as_uuid()).collect();
        let hours: Vec<DateTime<Utc>> = counts.iter().map(|(_, h)| h.hour).collect();
        let delivered: Vec<i64> = counts.iter().map(|(_, h)| signed(h.delivered)).collect();
        let failed: Vec<i64> = counts.iter().map(|(_, h)| signed(h.failed)).collect();
        let dispatch_ms: Vec<i64> = counts.iter().map(|(_, h)| signed(h.dispatch_ms)).collect();
        let longest: Vec<i32> =
            counts.iter().map(|(_, h)| i32::try_from(h.dispatch_ms_max).unwrap_or(i32::MAX)).collect();
        let mut unit = self.pool.unit().await?;
        let added = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::sql_query("SELECT doorman_add_activity($1, $2, $3, $4, $5, $6, $7)")
                    .bind::<Array<SqlUuid>, _>(&tenants)
                    .bind::<Array<Timestamptz>, _>(&hours)
                    .bind::<Array<BigInt>, _>(&delivered)
                    .bind::<Array<BigInt>, _>(&failed)
                    .bind::<Array<BigInt>, _>(&dispatch_ms)
                    .bind::<Array<Integer>, _>(&longest)
                    .bind::<Timestamptz, _>(keep_after)
                    .execute(conn)
                    .await
                    .map(drop)
            })
            .await
            .map_err(from_diesel);
        unit.finish(added).await
    }
}

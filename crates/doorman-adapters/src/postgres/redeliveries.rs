//! The events of tenants with redelivery on, as the redelivery runner takes them (ADR 26).
//!
//! Whether an event is due is worked out here, from what its receipt already keeps (its last
//! failure's time, or its claim's for one no attempt finished), its count of redeliveries and
//! the tenant's schedule: the outcome writes of the hot path are not touched. The runner's
//! lease is the payload's hold, the one an operator's replay takes (`PgStoredEvents::take`), so
//! the two never send one event at once; the row locks taken with `SKIP LOCKED` keep two
//! runners (in one process or two) from taking the same event.
//!
//! Each statement names one tenant (`tenant_id = $1` on both tables), under that tenant's
//! row-level security: on Citus it is routed to the tenant's shard and node.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bool, Integer, Interval, Nullable, SmallInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
use doorman_domain::ports::Redeliveries;
use doorman_domain::{
    Delivery, ExternalEventId, Platform, ReceiptKey, Redelivery, RedeliverySchedule, ScheduledTenant,
    StorageError, TenantId,
};

use super::errors::from_diesel;
use super::pool::act_for;
use super::stored_events::{HeldFor, PgStoredEvents};

/// The redelivery runner's store: over the same pool and keyring as replays'.
#[derive(Debug, Clone)]
pub struct PgRedeliveries {
    stored: PgStoredEvents,
}

impl PgRedeliveries {
    pub fn new(stored: PgStoredEvents) -> Self {
        Self { stored }
    }
}

#[derive(QueryableByName)]
struct ScheduledRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    tenant_id: uuid::Uuid,
    #[diesel(sql_type = Array<Nullable<Integer>>)]
    schedule: Vec<Option<i32>>,
    #[diesel(sql_type = Bool)]
    retain_payloads: bool,
}

#[derive(QueryableByName)]
struct DueRow {
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Text)]
    external_event_id: String,
    #[diesel(sql_type = Integer)]
    delivery_attempt: i32,
    #[diesel(sql_type = SmallInt)]
    redeliveries: i16,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = Timestamptz)]
    claimed_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    platform: String,
    #[diesel(sql_type = Text)]
    external_event_id: String,
}

/// What makes a receipt and its kept payload one of the tenant's ($1) that no one holds and no
/// one has finished: not handled, not given up, the payload not held (an expired hold is none).
///
/// `p.claimed_at IS NOT NULL` (always true) lets the payloads' expiry index, partial on it,
/// serve the scan in claim order: with it, the first due events are found by walking the index
/// and looking each receipt up by its key (0.3 ms with 10,000 due); without it, every kept
/// payload is joined and sorted on each pass (33 ms, on disk).
const OPEN_AND_UNHELD: &str = "\
FROM messaging_event_receipts AS r \
JOIN messaging_event_payloads AS p \
  ON p.tenant_id = r.tenant_id AND p.platform = r.platform AND p.external_event_id = r.external_event_id \
WHERE r.tenant_id = $1 AND p.tenant_id = $1 AND p.claimed_at IS NOT NULL \
  AND r.handled_at IS NULL AND r.gave_up_at IS NULL \
  AND (p.leased_until IS NULL OR p.leased_until <= now())";

/// The planner held to the claim-order walk of the payloads' index and a lookup of each
/// receipt by its key, whatever the statistics say: right after an outage's backlog was written
/// (before autovacuum has analyzed it) the planner otherwise joins every kept payload and sorts
/// them on disk on each pass (10,000 due: 51 ms instead of 0.24 ms; measured with EXPLAIN
/// ANALYZE). `SET LOCAL`, so only this transaction's statements; on Citus the coordinator's
/// sessions pass `SET LOCAL` on to the worker (`citus.propagate_set_commands = 'local'`, as
/// `citus.sql` sets it).
const PLANNER_SETTINGS: &str = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; \
     SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; SET LOCAL enable_sort = off; \
     SET LOCAL enable_material = off";

/// Due: fewer redeliveries than the schedule ($2) has delays, and the next one's delay passed
/// since the last attempt ended (the last failure, or the claim plus $3 when none finished).
/// Taken in the same statement: each held until $5 and counted.
///
/// One statement, the writes joined to what was found by the whole key: written as two updates
/// naming the taken ids (`external_event_id = ANY($ids)`), the planner, before autovacuum had
/// analyzed a backlog just written, walked all of the tenant's rows and filtered the ids (5–11 ms
/// a take with 10,000 due, ~2 ms of database CPU per redelivery; auto_explain); joined, each row
/// is looked up by its key.
fn take_query() -> String {
    format!(
        "WITH due AS MATERIALIZED ( \
           SELECT r.platform, r.external_event_id, r.delivery_attempt, r.redeliveries, p.payload, p.claimed_at \
           {OPEN_AND_UNHELD} \
             AND r.redeliveries < cardinality($2::int4[]) \
             AND coalesce(r.failed_at, r.claimed_at + $3) \
                 + make_interval(secs => ($2::int4[])[r.redeliveries + 1]) <= now() \
           ORDER BY p.claimed_at \
           LIMIT $4 \
           FOR UPDATE OF r, p SKIP LOCKED \
         ), held AS ( \
           UPDATE messaging_event_payloads AS p SET leased_until = $5 \
             FROM due AS d \
            WHERE p.tenant_id = $1 AND p.platform = d.platform AND p.external_event_id = d.external_event_id \
         ), counted AS ( \
           UPDATE messaging_event_receipts AS r SET redeliveries = r.redeliveries + 1 \
             FROM due AS d \
            WHERE r.tenant_id = $1 AND r.platform = d.platform AND r.external_event_id = d.external_event_id \
         ) \
         SELECT platform, external_event_id, delivery_attempt, redeliveries, payload, claimed_at FROM due \
         ORDER BY claimed_at"
    )
}

/// Spent: as many redeliveries as the schedule ($2) has delays. Given up in the same statement
/// (`gave_up_at` set to $4), and the payloads deleted unless the tenant keeps them ($5), joined
/// by the whole key as [`take_query`]'s writes are.
fn give_up_query() -> String {
    format!(
        "WITH spent AS MATERIALIZED ( \
           SELECT r.platform, r.external_event_id \
           {OPEN_AND_UNHELD} \
             AND r.redeliveries >= cardinality($2::int4[]) \
           ORDER BY p.claimed_at \
           LIMIT $3 \
           FOR UPDATE OF r, p SKIP LOCKED \
         ), given_up AS ( \
           UPDATE messaging_event_receipts AS r SET gave_up_at = $4 \
             FROM spent AS s \
            WHERE r.tenant_id = $1 AND r.platform = s.platform AND r.external_event_id = s.external_event_id \
         ), released AS ( \
           DELETE FROM messaging_event_payloads AS p \
            USING spent AS s \
            WHERE NOT $5 /* keep_payloads */ \
              AND p.tenant_id = $1 AND p.platform = s.platform AND p.external_event_id = s.external_event_id \
         ) \
         SELECT platform, external_event_id FROM spent"
    )
}

fn schedule_seconds(schedule: &RedeliverySchedule) -> Vec<i32> {
    schedule.seconds().into_iter().map(|s| i32::try_from(s).unwrap_or(i32::MAX)).collect()
}

fn key_of(tenant: TenantId, platform: &str, id: &str) -> Result<ReceiptKey, StorageError> {
    let platform: Platform = platform.parse().map_err(|e| StorageError::Unexpected(format!("{e}")))?;
    let external_id = ExternalEventId::new(id).map_err(|e| StorageError::Unexpected(format!("{e}")))?;
    Ok(ReceiptKey { tenant, platform, external_id })
}

impl Redeliveries for PgRedeliveries {
    async fn scheduled(&self) -> Result<Vec<ScheduledTenant>, StorageError> {
        let mut unit = self.stored.pool().unit().await?;
        let rows: Result<Vec<ScheduledRow>, StorageError> = diesel::sql_query(
            "SELECT tenant_id, schedule, retain_payloads FROM doorman_redelivery_tenants()",
        )
        .load(&mut *unit)
        .await
        .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        rows.into_iter()
            .filter_map(|row| {
                let tenant = TenantId::from_uuid(row.tenant_id);
                let seconds: Option<Vec<i64>> = row.schedule.iter().map(|s| s.map(i64::from)).collect();
                match seconds.map(|s| RedeliverySchedule::from_seconds(&s)) {
                    Some(Ok(schedule)) => {
                        Some(Ok(ScheduledTenant { tenant, schedule, retains_payloads: row.retain_payloads }))
                    }
                    // The table's check refuses such a schedule; one that slipped past is left out.
                    _ => {
                        tracing::error!(tenant.id = %tenant, "the tenant's stored redelivery schedule is not valid; its events are not redelivered");
                        None
                    }
                }
            })
            .collect()
    }

    async fn take_due(
        &self,
        tenant: TenantId,
        schedule: &RedeliverySchedule,
        limit: u32,
        unfinished_after: Duration,
        hold_until: DateTime<Utc>,
    ) -> Result<Vec<Redelivery>, StorageError> {
        let seconds = schedule_seconds(schedule);
        let unfinished_after = diesel::data_types::PgInterval::from_microseconds(
            i64::try_from(unfinished_after.as_micros()).unwrap_or(i64::MAX),
        );
        let mut unit = self.stored.pool().unit().await?;
        let taken = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                conn.batch_execute(PLANNER_SETTINGS).await?;
                diesel::sql_query(take_query())
                    .bind::<diesel::sql_types::Uuid, _>(*tenant.as_uuid())
                    .bind::<Array<Integer>, _>(&seconds)
                    .bind::<Interval, _>(unfinished_after)
                    .bind::<diesel::sql_types::BigInt, _>(i64::from(limit))
                    .bind::<Timestamptz, _>(hold_until)
                    .load::<DueRow>(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(taken).await?;
        let mut redeliveries = Vec::with_capacity(rows.len());
        for row in rows {
            let key = key_of(tenant, &row.platform, &row.external_event_id)?;
            let delivery = Delivery {
                attempt: u32::try_from(row.delivery_attempt).unwrap_or(0),
                retry_reason: None,
                replay: false,
                redelivery: u32::try_from(row.redeliveries).unwrap_or(0) + 1,
            };
            match self.stored.reopen(&key, &row.payload, delivery) {
                Ok(event) => redeliveries.push(Redelivery { event, claimed_at: row.claimed_at }),
                // Held and counted: it is taken again when the hold expires, until its schedule
                // is spent and it is given up.
                Err(problem) => tracing::error!(
                    tenant.id = %tenant,
                    event.id = %key.external_id,
                    problem = %problem,
                    "a redelivery's kept payload cannot be sent"
                ),
            }
        }
        Ok(redeliveries)
    }

    async fn put_back(&self, key: &ReceiptKey) -> Result<(), StorageError> {
        self.stored.drop_hold(key, HeldFor::Redelivery).await
    }

    async fn give_up(
        &self,
        tenant: TenantId,
        schedule: &RedeliverySchedule,
        limit: u32,
        keep_payloads: bool,
    ) -> Result<Vec<ReceiptKey>, StorageError> {
        let seconds = schedule_seconds(schedule);
        let mut unit = self.stored.pool().unit().await?;
        let spent = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                conn.batch_execute(PLANNER_SETTINGS).await?;
                diesel::sql_query(give_up_query())
                    .bind::<diesel::sql_types::Uuid, _>(*tenant.as_uuid())
                    .bind::<Array<Integer>, _>(&seconds)
                    .bind::<diesel::sql_types::BigInt, _>(i64::from(limit))
                    .bind::<Timestamptz, _>(Utc::now())
                    .bind::<Bool, _>(keep_payloads)
                    .load::<KeyRow>(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(spent).await?;
        // Given up, whatever becomes of a key that cannot be read back (every key was checked
        // when it was claimed): the others are still told and counted.
        Ok(rows
            .iter()
            .filter_map(|row| match key_of(tenant, &row.platform, &row.external_event_id) {
                Ok(key) => Some(key),
                Err(problem) => {
                    tracing::error!(tenant.id = %tenant, problem = %problem, "a given-up event's key cannot be read back; it is not told");
                    None
                }
            })
            .collect())
    }
}

//! The operational webhook's outbox (issue 41): operational events are recorded here, and the
//! sender in every serving process takes them, marks each delivered, or failed until its
//! schedule is spent and then given up, and prunes what is done.
//!
//! The table is deployment-level (its migration says why): no tenant is named, no row-level
//! security applies, and on Citus it is a plain table on the coordinator. A taker holds the
//! rows it took (`leased_until`) in the statement that took them, with `FOR UPDATE SKIP
//! LOCKED`, so two takers, in one process or two, never get one row while the hold lasts; a
//! killed sender loses nothing (its hold expires and the row is taken again, as the same
//! message).

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::data_types::PgInterval;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Interval, Nullable, SmallInt, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use doorman_domain::ports::OperationalOutbox;
use doorman_domain::{
    ExternalEventId, OperationalEvent, OperationalKind, RedeliverySchedule, StorageError, TenantId,
};
use uuid::Uuid;

use super::errors::from_diesel;
use super::pool::PgPool;
use super::schema::operational_events as events;

/// The outbox, on the serving role's pool.
#[derive(Debug, Clone)]
pub struct PgOperationalOutbox {
    pool: PgPool,
}

/// One operational event as a sender took it: its id (the message's, the same on every
/// attempt) and how many attempts of it already failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationalMessage {
    pub id: Uuid,
    pub event: OperationalEvent,
    pub attempts: u32,
}

/// What became of a message whose attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// It is due again then.
    RetryAt(DateTime<Utc>),
    /// Its schedule is spent: it is not sent again.
    GaveUp,
    /// Another taker had already ended it (delivered or given up): nothing changed.
    AlreadyEnded,
}

#[derive(QueryableByName)]
struct TakenRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    r#type: String,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    tenant_id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    external_event_id: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    occurred_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    detail: Option<String>,
    #[diesel(sql_type = SmallInt)]
    attempts: i16,
}

#[derive(QueryableByName)]
struct FailedRow {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next_attempt_at: Option<DateTime<Utc>>,
}

/// Due (its next attempt's time passed), not ended, not held; the oldest first; held until
/// `now() + $2` in the same statement.
const TAKE_DUE: &str = "\
WITH due AS ( \
    SELECT id FROM operational_events \
    WHERE delivered_at IS NULL AND gave_up_at IS NULL AND next_attempt_at <= now() \
      AND (leased_until IS NULL OR leased_until <= now()) \
    ORDER BY next_attempt_at, occurred_at, id \
    LIMIT $1 \
    FOR UPDATE SKIP LOCKED) \
UPDATE operational_events AS o SET leased_until = now() + $2 \
FROM due WHERE o.id = due.id \
RETURNING o.id, o.type, o.tenant_id, o.external_event_id, o.occurred_at, o.detail, o.attempts";

/// One more failed attempt ($1's), why ($2), and the schedule's delays in seconds ($3): the
/// next attempt that many seconds from now, or given up when the schedule has no delay left.
/// `next_attempt_at` comes back only for a retry.
const FAIL: &str = "\
UPDATE operational_events SET \
    attempts = attempts + 1, \
    last_failure = $2, \
    leased_until = NULL, \
    next_attempt_at = CASE WHEN attempts < cardinality($3::int4[]) \
        THEN now() + make_interval(secs => ($3::int4[])[attempts + 1]) ELSE next_attempt_at END, \
    gave_up_at = CASE WHEN attempts < cardinality($3::int4[]) THEN NULL ELSE now() END \
WHERE id = $1 AND delivered_at IS NULL AND gave_up_at IS NULL \
RETURNING CASE WHEN gave_up_at IS NULL THEN next_attempt_at END AS next_attempt_at";

/// Delivered or given up longer than $1 ago, at most $2 of them.
const PRUNE: &str = "\
DELETE FROM operational_events WHERE id IN ( \
    SELECT id FROM operational_events \
    WHERE coalesce(delivered_at, gave_up_at) < now() - $1 \
    LIMIT $2)";

impl PgOperationalOutbox {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Takes up to `limit` due messages and holds them for `hold`: no other taker gets them
    /// until the hold ends (or they are marked). The oldest first.
    pub async fn take_due(
        &self,
        limit: u32,
        hold: Duration,
    ) -> Result<Vec<OperationalMessage>, StorageError> {
        let hold = PgInterval::from_microseconds(i64::try_from(hold.as_micros()).unwrap_or(i64::MAX));
        let mut unit = self.pool.unit().await?;
        let rows = diesel::sql_query(TAKE_DUE)
            .bind::<BigInt, _>(i64::from(limit))
            .bind::<Interval, _>(hold)
            .load::<TakenRow>(&mut *unit)
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        let mut taken: Vec<OperationalMessage> = rows.into_iter().filter_map(message).collect();
        taken.sort_by_key(|m| (m.event.at, m.id));
        Ok(taken)
    }

    /// The message's receiver took it: it is not sent again.
    pub async fn delivered(&self, id: Uuid) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = diesel::sql_query(
            "UPDATE operational_events SET delivered_at = now(), leased_until = NULL \
             WHERE id = $1 AND delivered_at IS NULL",
        )
        .bind::<diesel::sql_types::Uuid, _>(id)
        .execute(&mut *unit)
        .await
        .map(drop)
        .map_err(from_diesel);
        unit.finish(done).await
    }

    /// The message's attempt failed (`reason`, for people): counted, and due again after the
    /// schedule's next delay, or given up when the schedule is spent.
    pub async fn failed(
        &self,
        id: Uuid,
        schedule: &RedeliverySchedule,
        reason: &str,
    ) -> Result<AfterFailure, StorageError> {
        let seconds: Vec<i32> =
            schedule.seconds().into_iter().map(|s| i32::try_from(s).unwrap_or(i32::MAX)).collect();
        let mut unit = self.pool.unit().await?;
        let row = diesel::sql_query(FAIL)
            .bind::<diesel::sql_types::Uuid, _>(id)
            .bind::<Text, _>(reason)
            .bind::<Array<Integer>, _>(&seconds)
            .get_result::<FailedRow>(&mut *unit)
            .await
            .optional()
            .map_err(from_diesel);
        let row = unit.finish(row).await?;
        Ok(match row {
            None => AfterFailure::AlreadyEnded,
            Some(FailedRow { next_attempt_at: Some(at) }) => AfterFailure::RetryAt(at),
            Some(FailedRow { next_attempt_at: None }) => AfterFailure::GaveUp,
        })
    }

    /// Deletes up to `limit` messages delivered or given up more than `keep_for` ago; how many.
    pub async fn prune(&self, keep_for: Duration, limit: u32) -> Result<usize, StorageError> {
        let keep_for = PgInterval::from_microseconds(i64::try_from(keep_for.as_micros()).unwrap_or(i64::MAX));
        let mut unit = self.pool.unit().await?;
        let pruned = diesel::sql_query(PRUNE)
            .bind::<Interval, _>(keep_for)
            .bind::<BigInt, _>(i64::from(limit))
            .execute(&mut *unit)
            .await
            .map_err(from_diesel);
        unit.finish(pruned).await
    }
}

/// A taken row as a message; a row the table's checks should have refused is logged and left
/// held (it is taken again when its hold ends, and logged again).
fn message(row: TakenRow) -> Option<OperationalMessage> {
    let Some(kind) = OperationalKind::parse(&row.r#type) else {
        tracing::error!(operational.id = %row.id, "an operational event of an unknown type is not sent");
        return None;
    };
    let external_event_id = match row.external_event_id.as_deref().map(ExternalEventId::new).transpose() {
        Ok(id) => id,
        Err(_) => {
            tracing::error!(operational.id = %row.id, "an operational event's event id is not valid; it is not sent");
            return None;
        }
    };
    Some(OperationalMessage {
        id: row.id,
        event: OperationalEvent {
            kind,
            tenant: TenantId::from_uuid(row.tenant_id),
            external_event_id,
            at: row.occurred_at,
            detail: row.detail,
        },
        attempts: u32::try_from(row.attempts).unwrap_or(0),
    })
}

impl OperationalOutbox for PgOperationalOutbox {
    /// One INSERT for the batch; each event gets a fresh id, its message's for good.
    async fn record(&self, events: &[OperationalEvent]) -> Result<(), StorageError> {
        if events.is_empty() {
            return Ok(());
        }
        let rows: Vec<_> = events
            .iter()
            .map(|event| {
                (
                    events::id.eq(Uuid::new_v4()),
                    events::type_.eq(event.kind.as_str()),
                    events::tenant_id.eq(*event.tenant.as_uuid()),
                    events::external_event_id
                        .eq(event.external_event_id.as_ref().map(ExternalEventId::as_str)),
                    events::occurred_at.eq(event.at),
                    events::detail.eq(event.detail.as_deref()),
                )
            })
            .collect();
        let mut unit = self.pool.unit().await?;
        let recorded = diesel::insert_into(events::table)
            .values(&rows)
            .execute(&mut *unit)
            .await
            .map(drop)
            .map_err(from_diesel);
        unit.finish(recorded).await
    }
}

//! A receipt as stored, read back into the domain's [`Receipt`].

use chrono::{DateTime, Utc};
use diesel::expression::BoxableExpression;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Nullable, Timestamptz};
use doorman_domain::{
    EventFilter, EventState, ExternalEventId, Failure, FirstDelivery, Platform, Receipt, ReceiptKey,
    StorageError, TenantId, ValidationError,
};
use uuid::Uuid;

use super::schema::messaging_event_receipts as receipts;

type Boxed<'a> = receipts::BoxedQuery<'a, diesel::pg::Pg>;

/// Claimed at or after `since` and before `until`, where the filter asks; and `claimed_at IS
/// NOT NULL`, always true (the column is `NOT NULL`), which the planner needs to use the
/// receipts' claim-time index (`messaging_event_receipts_expiry`, partial on it) for a list in
/// claim order: without it, a tenant's 200,000 receipts were read and sorted for each page of
/// the handled list (368 ms; 5 ms with it, `just bench-console`).
fn claimed_between<'a>(mut query: Boxed<'a>, filter: &EventFilter) -> Boxed<'a> {
    query = query.filter(receipts::claimed_at.is_not_null());
    if let Some(since) = filter.since {
        query = query.filter(receipts::claimed_at.ge(since));
    }
    if let Some(until) = filter.until {
        query = query.filter(receipts::claimed_at.lt(until));
    }
    query
}

/// The receipts a listing selects (its tenant, state, window and type), in no order: its
/// pages add their cursor and order, its total a limit, a replay by filter its limit (what the
/// list shows is what is replayed).
pub(crate) fn listing<'a>(
    tenant: Option<TenantId>,
    filter: &EventFilter,
    watermark: Option<DateTime<Utc>>,
) -> Boxed<'a> {
    let mut query = receipts::table.into_boxed();
    if let Some(tenant) = tenant {
        query = query.filter(receipts::tenant_id.eq(*tenant.as_uuid()));
    }
    if let Some(event_type) = &filter.event_type {
        query = query.filter(receipts::event_type.eq(event_type.clone()));
    }
    match filter.state {
        None => claimed_between(query, filter),
        Some(EventState::Failed) => {
            query =
                query.filter(receipts::handled_at.is_null()).filter(receipts::failure_reason.is_not_null());
            if let Some(since) = filter.since {
                query = query.filter(receipts::failed_at.ge(since));
            }
            if let Some(until) = filter.until {
                query = query.filter(receipts::failed_at.lt(until));
            }
            query
        }
        Some(EventState::Handled) => {
            claimed_between(query.filter(receipts::handled_at.is_not_null()), filter)
        }
        Some(state @ (EventState::InFlight | EventState::Stranded)) => {
            query = query.filter(receipts::handled_at.is_null()).filter(receipts::failure_reason.is_null());
            query = if state == EventState::Stranded {
                query.filter(stranded_before(filter.stranded_before, watermark))
            } else {
                query.filter(receipts::claimed_at.ge(filter.stranded_before))
            };
            claimed_between(query, filter)
        }
    }
}

diesel::define_sql_function! {
    /// The stranded rule, stated once in SQL (migration `stranded_and_sealed_rules_once`; the
    /// domain's `Receipt::status` is its twin, and a test holds them equal): claimed before
    /// `before`, never handled, no failure recorded.
    fn doorman_is_stranded(
        handled_at: diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
        failure_reason: diesel::sql_types::Nullable<diesel::sql_types::Text>,
        claimed_at: diesel::sql_types::Timestamptz,
        before: diesel::sql_types::Timestamptz,
    ) -> diesel::sql_types::Bool;
}

/// The stranded rule as a reader applies it: [`doorman_is_stranded`], on the receipts the
/// last sweep marked (`swept_at`, read through the index of marked receipts) and on those
/// claimed since its watermark (`swept_before`: a short range of the claim-time index). Every
/// receipt without an outcome claimed up to the watermark is marked (the sweep marks them; a
/// claim written late behind it is marked as it is written; decision 18 names the one
/// exception), so the two together are all of them, and a reader finds every stranded receipt
/// without sweeping: a read never writes.
/// The sweep is the background process's (the gauges' `doorman_receipt_counts`).
///
/// Read the watermark ([`sweep_watermark`]) before the receipts, in an earlier statement: a
/// sweep committed in between only adds marks to receipts after the watermark read, which the
/// second half finds anyway; read the other way round, it would hide the receipts it marked
/// between the two watermarks. (On Citus a sweep commits on the coordinator a moment before
/// its workers' marks are visible, two-phase: in that moment a listing can miss what it
/// marked, and the next one finds it.)
pub(crate) fn stranded_before(
    before: DateTime<Utc>,
    watermark: Option<DateTime<Utc>>,
) -> Box<dyn BoxableExpression<receipts::table, diesel::pg::Pg, SqlType = Bool>> {
    let stranded =
        doorman_is_stranded(receipts::handled_at, receipts::failure_reason, receipts::claimed_at, before);
    match watermark {
        Some(watermark) => {
            Box::new(stranded.and(receipts::swept_at.is_not_null().or(receipts::claimed_at.gt(watermark))))
        }
        // Never swept: every receipt is after the watermark.
        None => Box::new(stranded),
    }
}

#[derive(QueryableByName)]
struct Watermark {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    swept_before: Option<DateTime<Utc>>,
}

/// The sweep's watermark, read, never moved (no lock: a read must not wait for a sweep under
/// way, nor take a row lock, which is a write); `None` before the first sweep (`-infinity`).
pub(crate) async fn sweep_watermark(
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<Option<DateTime<Utc>>, diesel::result::Error> {
    let found: Option<Watermark> = diesel_async::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT CASE WHEN isfinite(swept_before) THEN swept_before END AS swept_before \
             FROM messaging_receipt_sweep",
        ),
        conn,
    )
    .await
    .optional()?;
    Ok(found.and_then(|w| w.swept_before))
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = receipts)]
pub(crate) struct ReceiptRow {
    tenant_id: Uuid,
    platform: String,
    external_event_id: String,
    event_type: String,
    delivery_attempt: i32,
    claimed_at: DateTime<Utc>,
    handled_at: Option<DateTime<Utc>>,
    failure_reason: Option<String>,
    failed_at: Option<DateTime<Utc>>,
    replays: i32,
    dispatched_at: Option<DateTime<Utc>>,
    answer_status: Option<i16>,
    redeliveries: i16,
    gave_up_at: Option<DateTime<Utc>>,
}

impl ReceiptRow {
    pub(crate) fn external_event_id(&self) -> &str {
        &self.external_event_id
    }

    pub(crate) fn into_receipt(self) -> Result<Receipt, StorageError> {
        let unreadable = |e: ValidationError| StorageError::Unexpected(format!("stored receipt: {e}"));
        Ok(Receipt {
            key: ReceiptKey {
                tenant: TenantId::from_uuid(self.tenant_id),
                platform: self.platform.parse::<Platform>().map_err(unreadable)?,
                external_id: ExternalEventId::new(self.external_event_id).map_err(unreadable)?,
            },
            event_type: self.event_type,
            attempt: u32::try_from(self.delivery_attempt).unwrap_or(0),
            claimed_at: self.claimed_at,
            handled_at: self.handled_at,
            failure: match (self.failure_reason, self.failed_at) {
                (Some(reason), Some(at)) => Some(Failure { reason, at }),
                _ => None,
            },
            replays: u32::try_from(self.replays).unwrap_or(0),
            redeliveries: u32::try_from(self.redeliveries).unwrap_or(0),
            gave_up_at: self.gave_up_at,
            first_delivery: match (self.dispatched_at, self.answer_status.and_then(|s| u16::try_from(s).ok()))
            {
                (Some(started_at), Some(status)) => Some(FirstDelivery { started_at, status }),
                _ => None,
            },
        })
    }
}

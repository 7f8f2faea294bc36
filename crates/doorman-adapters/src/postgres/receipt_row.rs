//! A receipt as stored, read back into the domain's [`Receipt`].

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use doorman_domain::{
    ExternalEventId, Failure, Platform, Receipt, ReceiptKey, StorageError, TenantId, ValidationError,
};
use uuid::Uuid;

use super::schema::messaging_event_receipts as receipts;

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

diesel::define_sql_function! {
    /// Marks the receipts claimed since the last sweep, up to `before`, that have no outcome
    /// (migration `claims_and_outcomes_at_full_speed`): the stranded among them are then read
    /// through the index of marked receipts. Returns how many it marked.
    fn doorman_sweep_receipts(before: diesel::sql_types::Timestamptz) -> diesel::sql_types::BigInt;
}

/// [`doorman_is_stranded`] on a receipts query's row, for the receipts a sweep marked (every
/// stranded one is, once [`sweep`] has run up to `before`).
#[allow(clippy::type_complexity)]
pub(crate) fn stranded_before(
    before: DateTime<Utc>,
) -> diesel::dsl::And<
    diesel::dsl::IsNotNull<receipts::swept_at>,
    doorman_is_stranded<
        receipts::handled_at,
        receipts::failure_reason,
        receipts::claimed_at,
        diesel::dsl::AsExprOf<DateTime<Utc>, diesel::sql_types::Timestamptz>,
    >,
> {
    receipts::swept_at.is_not_null().and(doorman_is_stranded(
        receipts::handled_at,
        receipts::failure_reason,
        receipts::claimed_at,
        before,
    ))
}

/// Sweeps up to `before`: what every reader of stranded receipts does first, so the marked
/// ones are all of them.
pub(crate) async fn sweep(
    conn: &mut diesel_async::AsyncPgConnection,
    before: DateTime<Utc>,
) -> Result<(), diesel::result::Error> {
    diesel_async::RunQueryDsl::execute(diesel::select(doorman_sweep_receipts(before)), conn).await.map(drop)
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
        })
    }
}

//! The payloads retaining tenants kept, as `doorman receipts replay` finds and holds them.
//!
//! Runs on a server pool (as `doorman_app`, under row-level security), each transaction acting
//! for the one tenant being replayed. A kept payload is the Events API body as received; it is
//! opened and parsed again by the same parser as a live delivery, so a replayed event is the
//! event that was claimed, down to its workspace and lifecycle.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::StoredEvents;
use doorman_domain::{
    Delivery, EventState, ExternalEventId, MAX_REPLAY_EVENTS, ReceiptKey, ReceiptRecord, ReplaySelection,
    ReplayTake, StorageError, TenantId,
};

use super::directory::PAYLOAD_COLUMN;
use super::errors::from_diesel;
use super::pool::{PgPool, act_for};
use super::receipt_row::{ReceiptRow, listing, stranded_before, sweep_watermark};
use super::schema::{messaging_event_payloads as payloads, messaging_event_receipts as receipts};
use crate::secrets::{Keyring, SealedIn};
use crate::slack::{Parsed, parse_events};

/// The most receipts one replay selects (run it again for the rest): the domain's
/// [`MAX_REPLAY_EVENTS`].
pub const REPLAY_LIMIT: i64 = MAX_REPLAY_EVENTS as i64;

#[derive(Debug, Clone)]
pub struct PgStoredEvents {
    pool: PgPool,
    keys: Arc<Keyring>,
}

impl PgStoredEvents {
    pub fn new(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self { pool, keys }
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The kept payload opened and parsed as the delivery it was, as `delivery` says it is now
    /// (a replay, or a redelivery).
    pub(crate) fn reopen(
        &self,
        key: &ReceiptKey,
        sealed: &str,
        delivery: Delivery,
    ) -> Result<doorman_domain::InboundEvent, String> {
        let body = self
            .keys
            .open(sealed, SealedIn { tenant: key.tenant, column: PAYLOAD_COLUMN })
            .map_err(|e| format!("the kept payload does not open: {e}"))?;
        match parse_events(Some("application/json"), &body, delivery) {
            Ok(Parsed::Event(event)) if event.external_id.as_ref() == Some(&key.external_id) => Ok(event),
            Ok(_) => Err("the kept payload is not this event".into()),
            Err(rejection) => Err(format!("the kept payload does not parse: {rejection}")),
        }
    }
}

/// Why taking an event stopped, inside its transaction (anything but `ReplayTake::Event` rolls
/// back, so nothing is counted or held).
enum Stop {
    Answer(ReplayTake),
    Database(diesel::result::Error),
    Unreadable(String),
}

impl From<diesel::result::Error> for Stop {
    fn from(error: diesel::result::Error) -> Self {
        Self::Database(error)
    }
}

/// What a payload's hold was taken for: its count on the receipt is given back with it.
#[derive(Debug, Clone, Copy)]
pub(super) enum HeldFor {
    Replay,
    Redelivery,
}

impl PgStoredEvents {
    /// Drops the hold on `key`'s payload without an outcome (its send never started) and, if
    /// there was one, gives back the count the take added (`replays` or `redeliveries`).
    ///
    /// Whoever holds it: the caller drops the hold it took a moment before (a replay refused, a
    /// redelivery put back), well within the hold's time (the dispatch timeout plus 30 s), so
    /// the hold is still its own. One dropped after its own had expired and another taker's
    /// began would end that one's hold early, and its count would be the wrong one given back.
    pub(super) async fn drop_hold(&self, key: &ReceiptKey, held_for: HeldFor) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let released = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                let released = diesel::update(
                    payloads::table
                        .filter(payloads::tenant_id.eq(*key.tenant.as_uuid()))
                        .filter(payloads::platform.eq(key.platform.as_str()))
                        .filter(payloads::external_event_id.eq(key.external_id.as_str()))
                        .filter(payloads::leased_until.is_not_null()),
                )
                .set(payloads::leased_until.eq(None::<DateTime<Utc>>))
                .execute(conn)
                .await?;
                if released == 0 {
                    return Ok(());
                }
                let receipt = receipts::table
                    .filter(receipts::tenant_id.eq(*key.tenant.as_uuid()))
                    .filter(receipts::platform.eq(key.platform.as_str()))
                    .filter(receipts::external_event_id.eq(key.external_id.as_str()));
                match held_for {
                    HeldFor::Replay => {
                        diesel::update(receipt.filter(receipts::replays.gt(0)))
                            .set(receipts::replays.eq(receipts::replays - 1))
                            .execute(conn)
                            .await?
                    }
                    HeldFor::Redelivery => {
                        diesel::update(receipt.filter(receipts::redeliveries.gt(0)))
                            .set(receipts::redeliveries.eq(receipts::redeliveries - 1))
                            .execute(conn)
                            .await?
                    }
                };
                Ok(())
            })
            .await
            .map_err(from_diesel);
        unit.finish(released).await
    }
}

impl StoredEvents for PgStoredEvents {
    async fn select(
        &self,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> Result<Vec<ReceiptRecord>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let selection = selection.clone();
        let selected = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let watermark = match &selection {
                    ReplaySelection::StrandedBefore(_) => sweep_watermark(conn).await?,
                    ReplaySelection::Matching { filter, .. }
                        if filter.state == Some(EventState::Stranded) =>
                    {
                        sweep_watermark(conn).await?
                    }
                    _ => None,
                };
                let of_tenant =
                    || receipts::table.filter(receipts::tenant_id.eq(*tenant.as_uuid())).into_boxed();
                let (query, limit) = match &selection {
                    ReplaySelection::Event(id) => (
                        of_tenant().filter(receipts::external_event_id.eq(id.as_str().to_owned())),
                        REPLAY_LIMIT,
                    ),
                    ReplaySelection::FailedSince(since) => (
                        of_tenant()
                            .filter(receipts::handled_at.is_null())
                            .filter(receipts::failure_reason.is_not_null())
                            .filter(receipts::failed_at.ge(*since)),
                        REPLAY_LIMIT,
                    ),
                    ReplaySelection::StrandedBefore(before) => {
                        (of_tenant().filter(stranded_before(*before, watermark)), REPLAY_LIMIT)
                    }
                    ReplaySelection::Chosen(ids) => {
                        let ids: Vec<&str> = ids.iter().map(ExternalEventId::as_str).collect();
                        (of_tenant().filter(receipts::external_event_id.eq_any(ids)), REPLAY_LIMIT)
                    }
                    ReplaySelection::Matching { filter, limit } => {
                        (listing(Some(tenant), filter, watermark), i64::from(*limit).min(REPLAY_LIMIT))
                    }
                };
                let rows: Vec<ReceiptRow> = query
                    .order((receipts::claimed_at.asc(), receipts::external_event_id.asc()))
                    .limit(limit)
                    .select(ReceiptRow::as_select())
                    .load(conn)
                    .await?;
                let ids: Vec<&str> = rows.iter().map(|r| r.external_event_id()).collect();
                let kept: Vec<(String, String)> = payloads::table
                    .filter(payloads::tenant_id.eq(*tenant.as_uuid()))
                    .filter(payloads::external_event_id.eq_any(&ids))
                    .select((payloads::platform, payloads::external_event_id))
                    .load(conn)
                    .await?;
                Ok((rows, kept))
            })
            .await
            .map_err(from_diesel);
        unit.finish(selected).await.and_then(|(rows, kept)| {
            rows.into_iter()
                .map(|row| {
                    let receipt = row.into_receipt()?;
                    let payload_kept = kept.iter().any(|(platform, id)| {
                        platform == receipt.key.platform.as_str() && id == receipt.key.external_id.as_str()
                    });
                    Ok(ReceiptRecord { receipt, payload_kept })
                })
                .collect()
        })
    }

    /// Under the receipt's row lock: concurrent takes of one event wait for each other, and
    /// the second finds it held.
    async fn take(&self, key: &ReceiptKey, hold_until: DateTime<Utc>) -> Result<ReplayTake, StorageError> {
        let mut unit = self.pool.unit().await?;
        let result = unit
            .transaction::<_, Stop, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                let by_key = receipts::tenant_id
                    .eq(*key.tenant.as_uuid())
                    .and(receipts::platform.eq(key.platform.as_str()))
                    .and(receipts::external_event_id.eq(key.external_id.as_str()));
                let found: Option<(Option<DateTime<Utc>>, i32)> = receipts::table
                    .filter(by_key)
                    .select((receipts::handled_at, receipts::delivery_attempt))
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let Some((handled_at, attempt)) = found else {
                    return Err(Stop::Answer(ReplayTake::Unknown));
                };
                if handled_at.is_some() {
                    return Err(Stop::Answer(ReplayTake::Handled));
                }
                let payload_key = payloads::tenant_id
                    .eq(*key.tenant.as_uuid())
                    .and(payloads::platform.eq(key.platform.as_str()))
                    .and(payloads::external_event_id.eq(key.external_id.as_str()));
                let kept: Option<(String, DateTime<Utc>, Option<DateTime<Utc>>)> = payloads::table
                    .filter(payload_key)
                    .select((payloads::payload, payloads::claimed_at, payloads::leased_until))
                    .first(conn)
                    .await
                    .optional()?;
                let Some((sealed, claimed_at, leased_until)) = kept else {
                    return Err(Stop::Answer(ReplayTake::NoPayload));
                };
                if leased_until.is_some_and(|until| until > Utc::now()) {
                    return Err(Stop::Answer(ReplayTake::InProgress));
                }
                let delivery = Delivery {
                    attempt: u32::try_from(attempt).unwrap_or(0),
                    retry_reason: None,
                    replay: true,
                    redelivery: 0,
                };
                let event = self.reopen(key, &sealed, delivery).map_err(Stop::Unreadable)?;
                diesel::update(payloads::table.filter(payload_key))
                    .set(payloads::leased_until.eq(Some(hold_until)))
                    .execute(conn)
                    .await?;
                diesel::update(receipts::table.filter(by_key))
                    .set(receipts::replays.eq(receipts::replays + 1))
                    .execute(conn)
                    .await?;
                Ok(ReplayTake::Event { event: Box::new(event), claimed_at })
            })
            .await;
        let taken = match result {
            Ok(taken) | Err(Stop::Answer(taken)) => Ok(taken),
            Err(Stop::Database(error)) => Err(from_diesel(error)),
            Err(Stop::Unreadable(problem)) => Err(StorageError::Unexpected(problem)),
        };
        unit.finish(taken).await
    }

    async fn release(&self, key: &ReceiptKey) -> Result<(), StorageError> {
        self.drop_hold(key, HeldFor::Replay).await
    }
}

//! Receipts as operators read them: one, or a page of failed or stranded ones, each with
//! whether its payload is kept; or every receipt of one event id across the tenants a caller
//! may see (support's search); and one event's kept payload, opened for a caller the use case
//! allowed to read it. Across tenants, for the overview: the rollup's failures by tenant, and
//! the receipts the sweep marked stranded, counted by tenant.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::Ledger;
use doorman_domain::{
    ActivityHour, AttemptRecord, EventCursor, EventFilter, EventState, ExternalEventId, FailingTenant,
    FailureKind, FoundReceipt, KeptPayload, Page, PageRequest, Platform, ReceiptKey, ReceiptRecord,
    StorageError, StrandedTenant, TenantId, hour_of,
};
use uuid::Uuid;

use crate::postgres::directory::PAYLOAD_COLUMN;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, across_tenants, act_for, act_for_tenants, rows_across_tenants};
use crate::postgres::receipt_row::{ReceiptRow, listing, sweep_watermark};
use crate::postgres::schema::{
    messaging_activity_hours as activity, messaging_event_attempts as attempts,
    messaging_event_payloads as payloads, messaging_event_receipts as receipts, tenants,
};
use crate::secrets::{Keyring, SealedIn};
use crate::slack::shown_payload;

#[derive(Debug, Clone)]
pub struct PgLedger {
    pool: PgPool,
    /// Open kept payloads (without them, reading one fails: the command line's pool may have
    /// none, and shows no payload).
    keys: Option<Arc<Keyring>>,
}

impl PgLedger {
    pub fn new(pool: PgPool, keys: Option<Arc<Keyring>>) -> Self {
        Self { pool, keys }
    }
}

/// Whether the receipt's payload is kept: one probe of the payloads' primary key. Given the
/// tenant, the probe names it as a value too: on Citus a subquery correlated only by
/// `receipts.tenant_id` is planned across every shard (so one worker down fails every
/// tenant's read), one that names the tenant is routed to that tenant's worker alone.
macro_rules! payload_kept {
    () => {
        diesel::dsl::exists(
            payloads::table
                .filter(payloads::tenant_id.eq(receipts::tenant_id))
                .filter(payloads::platform.eq(receipts::platform))
                .filter(payloads::external_event_id.eq(receipts::external_event_id)),
        )
    };
    ($tenant:expr) => {
        diesel::dsl::exists(
            payloads::table
                .filter(payloads::tenant_id.eq($tenant))
                .filter(payloads::tenant_id.eq(receipts::tenant_id))
                .filter(payloads::platform.eq(receipts::platform))
                .filter(payloads::external_event_id.eq(receipts::external_event_id)),
        )
    };
}

/// What a listing (its page or its count) sets up before its statement: the sweep's watermark
/// for the stranded rule (read first, see [`stranded_before`](crate::postgres::receipt_row::stranded_before)), and the tenant's scope.
async fn listing_scope(
    conn: &mut diesel_async::AsyncPgConnection,
    tenant: Option<TenantId>,
    filter: &EventFilter,
) -> Result<Option<DateTime<Utc>>, diesel::result::Error> {
    let watermark = match filter.state {
        Some(EventState::Stranded) => sweep_watermark(conn).await?,
        _ => None,
    };
    if let Some(tenant) = tenant {
        act_for(conn, tenant).await?;
    }
    Ok(watermark)
}

/// The overview's stranded receipts by tenant: among the tenants `$1` (the caller's, listed
/// first), those the sweep marked (`swept_at`) that are stranded at `$2`
/// (`doorman_is_stranded`, the rule stated once in SQL, which the planner inlines: `claimed_at
/// < $2`, never handled, no failure), counted by tenant, the most first (ties by tenant id), at most `$3`.
/// `swept_at IS NOT NULL` is the predicate of `messaging_event_receipts_swept (tenant_id,
/// claimed_at)`, which serves it: receipts never marked (handled or failed before a sweep
/// looked, or claimed since) are not read, however many there are. A marked receipt handled
/// or failed later (a replay) stays in that index and is read and left out. On Citus,
/// grouped by the distribution column: each worker counts its own shards.
pub const STRANDED_BY_TENANT: &str = "SELECT r.tenant_id, count(*) AS stranded \
       FROM messaging_event_receipts AS r \
      WHERE r.tenant_id = ANY($1) AND r.swept_at IS NOT NULL \
        AND doorman_is_stranded(r.handled_at, r.failure_reason, r.claimed_at, $2) \
      GROUP BY r.tenant_id ORDER BY stranded DESC, r.tenant_id LIMIT $3";

/// A count as stored (`bigint`), never negative.
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Ledger for PgLedger {
    async fn receipt(&self, key: &ReceiptKey) -> Result<Option<ReceiptRecord>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found: Result<Option<(ReceiptRow, bool)>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                receipts::table
                    .filter(receipts::tenant_id.eq(key.tenant.as_uuid()))
                    .filter(receipts::platform.eq(key.platform.as_str()))
                    .filter(receipts::external_event_id.eq(key.external_id.as_str()))
                    .select((ReceiptRow::as_select(), payload_kept!(key.tenant.as_uuid())))
                    .first(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel);
        let found = unit.finish(found).await?;
        found
            .map(|(row, payload_kept)| Ok(ReceiptRecord { receipt: row.into_receipt()?, payload_kept }))
            .transpose()
    }

    /// Every state (`None`): newest claim first, through the receipts' (tenant, claim time)
    /// index. Handled: newest claim first, through the receipts' claim-time index (the agent's
    /// answer time is not indexed: a completion stays a heap-only update, ADR 18). Failed:
    /// newest failure first, through the index of failed receipts. In flight: oldest claim
    /// first among those claimed since the stranded threshold (the claim-time index again).
    /// Stranded: oldest claim first, by the readers' stranded rule ([`stranded_before`](crate::postgres::receipt_row::stranded_before): the
    /// receipts the last sweep marked and those claimed since; nothing is swept here, a read
    /// writes nothing). Every tenant's (`None`) needs the tables' owner: as `doorman_admin`
    /// it finds none (the admin API always names a tenant).
    async fn list(
        &self,
        tenant: Option<TenantId>,
        filter: &EventFilter,
        page: &PageRequest<EventCursor>,
    ) -> Result<Page<ReceiptRecord, EventCursor>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let (filter, page) = (filter.clone(), page.clone());
        let rows: Result<Vec<(ReceiptRow, bool)>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let watermark = listing_scope(conn, tenant, &filter).await?;
                let query = listing(tenant, &filter, watermark);
                let after = page.after.as_ref().map(|c| (c.at, c.event_id.as_str().to_owned()));
                let query =
                    match (filter.state, after) {
                        (Some(EventState::Failed), after) => {
                            let mut query = query;
                            if let Some((at, id)) = after {
                                query =
                                    query.filter(receipts::failed_at.lt(at).or(
                                        receipts::failed_at.eq(at).and(receipts::external_event_id.lt(id)),
                                    ));
                            }
                            query.order((receipts::failed_at.desc(), receipts::external_event_id.desc()))
                        }
                        (None | Some(EventState::Handled), after) => {
                            let mut query = query;
                            if let Some((at, id)) = after {
                                query =
                                    query.filter(receipts::claimed_at.lt(at).or(
                                        receipts::claimed_at.eq(at).and(receipts::external_event_id.lt(id)),
                                    ));
                            }
                            query.order((receipts::claimed_at.desc(), receipts::external_event_id.desc()))
                        }
                        (Some(EventState::InFlight | EventState::Stranded), after) => {
                            let mut query = query;
                            if let Some((at, id)) = after {
                                query =
                                    query.filter(receipts::claimed_at.gt(at).or(
                                        receipts::claimed_at.eq(at).and(receipts::external_event_id.gt(id)),
                                    ));
                            }
                            query.order((receipts::claimed_at.asc(), receipts::external_event_id.asc()))
                        }
                    };
                let query = query.limit(i64::from(page.limit.get()) + 1);
                match tenant {
                    Some(tenant) => {
                        query
                            .select((ReceiptRow::as_select(), payload_kept!(*tenant.as_uuid())))
                            .load(conn)
                            .await
                    }
                    None => query.select((ReceiptRow::as_select(), payload_kept!())).load(conn).await,
                }
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        let records = rows
            .into_iter()
            .map(|(row, payload_kept)| Ok(ReceiptRecord { receipt: row.into_receipt()?, payload_kept }))
            .collect::<Result<Vec<_>, StorageError>>()?;
        Ok(Page::from_overfetch(records, page.limit, |r: &ReceiptRecord| EventCursor {
            at: match (filter.state, &r.receipt.failure) {
                (Some(EventState::Failed), Some(failure)) => failure.at,
                _ => r.receipt.claimed_at,
            },
            event_id: r.receipt.key.external_id.clone(),
        }))
    }

    /// Two statements in one transaction, neither a scan of the receipts, and no index of
    /// their own (the hot path pays nothing for support's search):
    ///
    /// 1. the tenants searched, with their names: the one named (under `app.tenant_id`), or
    ///    every tenant (`app.all_tenants`, which `doorman_admin` may read `tenants` under);
    /// 2. `tenant_id = ANY($tenants) AND platform = $2 AND external_event_id = $3`: the
    ///    receipts' primary key `(tenant_id, platform, external_event_id)` serves it as one
    ///    probe per tenant (an index scan with the array as its condition), and on Citus the
    ///    tenants' values prune it to the shards that hold them, each probing its own index.
    ///
    /// The receipts' policy admits a row whose tenant is in `app.tenant_ids`, so the second
    /// statement runs with that list set to the tenants the first found: row-level security
    /// still holds it to them (a scoped caller's is its one tenant).
    async fn find(
        &self,
        tenant: Option<TenantId>,
        platform: Platform,
        event_id: &ExternalEventId,
    ) -> Result<Vec<FoundReceipt>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let event_id = event_id.as_str().to_owned();
        /// The tenants searched (id, name), and the receipts found among them.
        type Found = (Vec<(Uuid, String)>, Vec<ReceiptRow>);
        let found: Result<Found, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let mut searched = tenants::table.select((tenants::id, tenants::name)).into_boxed();
                match tenant {
                    Some(tenant) => {
                        act_for(conn, tenant).await?;
                        searched = searched.filter(tenants::id.eq(*tenant.as_uuid()));
                    }
                    None => {
                        across_tenants(conn).await?;
                        one_connection_per_worker(conn).await?;
                    }
                }
                let names: Vec<(Uuid, String)> = searched.load(conn).await?;
                if names.is_empty() {
                    return Ok((names, Vec::new()));
                }
                let ids: Vec<Uuid> = names.iter().map(|(id, _)| *id).collect();
                act_for_tenants(conn, &ids).await?;
                let rows = receipts::table
                    .filter(receipts::tenant_id.eq_any(ids))
                    .filter(receipts::platform.eq(platform.as_str()))
                    .filter(receipts::external_event_id.eq(event_id))
                    .select(ReceiptRow::as_select())
                    .load(conn)
                    .await?;
                Ok((names, rows))
            })
            .await
            .map_err(from_diesel);
        let (names, rows) = unit.finish(found).await?;
        let mut found = Vec::with_capacity(rows.len());
        for row in rows {
            let receipt = row.into_receipt()?;
            // Only a tenant searched: its row could not have been read otherwise.
            if let Some((_, name)) = names.iter().find(|(id, _)| id == receipt.key.tenant.as_uuid()) {
                found.push(FoundReceipt { tenant_name: name.clone(), receipt });
            }
        }
        found.sort_by(|a, b| {
            (a.tenant_name.as_str(), a.receipt.key.tenant)
                .cmp(&(b.tenant_name.as_str(), b.receipt.key.tenant))
        });
        Ok(found)
    }

    /// At most `up_to` rows of the listing's selection are read (a constant each, through the
    /// same indexes as its pages), and counted: a million receipts cost what `up_to` do.
    async fn count(
        &self,
        tenant: Option<TenantId>,
        filter: &EventFilter,
        up_to: u64,
    ) -> Result<u64, StorageError> {
        let mut unit = self.pool.unit().await?;
        let filter = filter.clone();
        let limit = i64::try_from(up_to).unwrap_or(i64::MAX);
        let rows: Result<Vec<i32>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let watermark = listing_scope(conn, tenant, &filter).await?;
                listing(tenant, &filter, watermark)
                    .select(diesel::dsl::sql::<diesel::sql_types::Integer>("1"))
                    .limit(limit)
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        Ok(unit.finish(rows).await?.len() as u64)
    }

    /// Through the rollup's primary key (tenant, hour); on Citus the rollup is an ordinary
    /// table on the coordinator (ADR 28).
    async fn activity(
        &self,
        tenant: TenantId,
        since: DateTime<Utc>,
    ) -> Result<Vec<ActivityHour>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let since = hour_of(since);
        let rows = unit
            .transaction::<Vec<(DateTime<Utc>, i64, i64, i64, i32)>, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                activity::table
                    .filter(activity::tenant_id.eq(*tenant.as_uuid()))
                    .filter(activity::hour.ge(since))
                    .order(activity::hour.asc())
                    .select((
                        activity::hour,
                        activity::delivered,
                        activity::failed,
                        activity::dispatch_ms,
                        activity::dispatch_ms_max,
                    ))
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        Ok(unit
            .finish(rows)
            .await?
            .into_iter()
            .map(|(hour, delivered, failed, dispatch_ms, max)| ActivityHour {
                hour,
                delivered: count(delivered),
                failed: count(failed),
                dispatch_ms: count(dispatch_ms),
                dispatch_ms_max: u32::try_from(max).unwrap_or(0),
            })
            .collect())
    }

    /// One statement across tenants (as `doorman_admin`, in a transaction that says so): the
    /// hours since then, by the index on the hour, summed by tenant, with the tenant's name.
    async fn failing_most(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<FailingTenant>, StorageError> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            tenant_id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            failed: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            delivered: i64,
        }
        let query = diesel::sql_query(
            "SELECT a.tenant_id, t.name, sum(a.failed)::bigint AS failed, sum(a.delivered)::bigint AS delivered \
               FROM messaging_activity_hours AS a JOIN tenants AS t ON t.id = a.tenant_id \
              WHERE a.hour >= $1 \
              GROUP BY a.tenant_id, t.name HAVING sum(a.failed) > 0 \
              ORDER BY failed DESC, t.name, a.tenant_id LIMIT $2",
        )
        .into_boxed()
        .bind::<diesel::sql_types::Timestamptz, _>(hour_of(since))
        .bind::<diesel::sql_types::BigInt, _>(i64::from(limit));
        let rows: Vec<Row> = rows_across_tenants(&self.pool, query).await?;
        Ok(rows
            .into_iter()
            .map(|row| FailingTenant {
                tenant: TenantId::from_uuid(row.tenant_id),
                name: row.name,
                failed: count(row.failed),
                delivered: count(row.delivered),
            })
            .collect())
    }

    /// Two statements in one transaction, as [`find`](Self::find) reads across tenants: every
    /// tenant with its name (`app.all_tenants`), then [`STRANDED_BY_TENANT`] among them, under
    /// `app.tenant_ids` naming them all (the receipts' policy admits no more). Only the receipts
    /// the sweep marked are read, through their partial index; nothing is swept or written.
    async fn stranded_most(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<StrandedTenant>, StorageError> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            tenant_id: Uuid,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            stranded: i64,
        }
        let mut unit = self.pool.unit().await?;
        let counted = unit
            .transaction::<(Vec<(Uuid, String)>, Vec<Row>), diesel::result::Error, _>(async |conn| {
                across_tenants(conn).await?;
                let names: Vec<(Uuid, String)> =
                    tenants::table.select((tenants::id, tenants::name)).load(conn).await?;
                if names.is_empty() {
                    return Ok((names, Vec::new()));
                }
                let ids: Vec<Uuid> = names.iter().map(|(id, _)| *id).collect();
                act_for_tenants(conn, &ids).await?;
                let rows = diesel::sql_query(STRANDED_BY_TENANT)
                    .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(ids)
                    .bind::<diesel::sql_types::Timestamptz, _>(before)
                    .bind::<diesel::sql_types::BigInt, _>(i64::from(limit))
                    .load(conn)
                    .await?;
                Ok((names, rows))
            })
            .await
            .map_err(from_diesel);
        let (names, rows) = unit.finish(counted).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                // Only a tenant listed: its receipts could not have been read otherwise.
                let (_, name) = names.iter().find(|(id, _)| *id == row.tenant_id)?;
                Some(StrandedTenant {
                    tenant: TenantId::from_uuid(row.tenant_id),
                    name: name.clone(),
                    stranded: count(row.stranded),
                })
            })
            .collect())
    }

    /// One probe of the payloads' primary key, acting for the event's tenant (row-level
    /// security holds it to that tenant), then opened with the keyring, bound to its tenant and
    /// column as it was sealed, and Slack's verification token redacted. A payload held by a
    /// replay or a redelivery is still shown: reading it takes no hold.
    async fn payload(&self, key: &ReceiptKey) -> Result<Option<KeptPayload>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let sealed: Result<Option<String>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                payloads::table
                    .filter(payloads::tenant_id.eq(key.tenant.as_uuid()))
                    .filter(payloads::platform.eq(key.platform.as_str()))
                    .filter(payloads::external_event_id.eq(key.external_id.as_str()))
                    .select(payloads::payload)
                    .first(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel);
        let Some(sealed) = unit.finish(sealed).await? else { return Ok(None) };
        let keys = self.keys.as_ref().ok_or_else(|| {
            StorageError::Unexpected("no encryption keys to open the kept payload with".into())
        })?;
        // The error says why it did not open, never what it holds.
        let body = keys
            .open(&sealed, SealedIn { tenant: key.tenant, column: PAYLOAD_COLUMN })
            .map_err(|e| StorageError::Unexpected(format!("the kept payload does not open: {e}")))?;
        let text = String::from_utf8(body)
            .map_err(|_| StorageError::Unexpected("the kept payload is not UTF-8 text".into()))?;
        Ok(Some(KeptPayload::new(shown_payload(&text))))
    }

    async fn attempts(&self, key: &ReceiptKey) -> Result<Vec<AttemptRecord>, StorageError> {
        type Row =
            (DateTime<Utc>, DateTime<Utc>, bool, Option<i16>, Option<String>, Option<String>, Option<String>);
        let mut unit = self.pool.unit().await?;
        let rows: Result<Vec<Row>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                attempts::table
                    .filter(attempts::tenant_id.eq(key.tenant.as_uuid()))
                    .filter(attempts::platform.eq(key.platform.as_str()))
                    .filter(attempts::external_event_id.eq(key.external_id.as_str()))
                    .order(attempts::started_at.asc())
                    .select((
                        attempts::started_at,
                        attempts::ended_at,
                        attempts::replay,
                        attempts::status,
                        attempts::failure,
                        attempts::reason,
                        attempts::answer,
                    ))
                    .load::<Row>(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        Ok(unit
            .finish(rows)
            .await?
            .into_iter()
            .map(|(started_at, ended_at, replay, status, failure, reason, answer)| AttemptRecord {
                started_at,
                ended_at,
                replay,
                status: status.and_then(|s| u16::try_from(s).ok()),
                // A word a later release wrote reads as the catch-all.
                failure: failure.map(|word| FailureKind::parse(&word).unwrap_or(FailureKind::Internal)),
                reason,
                answer,
            })
            .collect())
    }
}

/// On Citus, a search across tenants is one task per shard (every shard holding a tenant
/// searched, each probing its primary key once per tenant, ADR 27). By default the coordinator
/// opens more connections to a worker to run them in parallel (up to 16 each); for tasks of a
/// fraction of a millisecond, opening them costs more than it saves: with the transaction's one
/// cached connection per worker, 200 tenants over 32 shards answered in 19–23 ms at the median
/// instead of 30–37, and the slowest in 42–61 ms instead of 100–116 (docs/benchmarks.md). On
/// one PostgreSQL the setting is a placeholder that nothing reads.
async fn one_connection_per_worker(
    conn: &mut diesel_async::AsyncPgConnection,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SET LOCAL citus.max_adaptive_executor_pool_size = 1").execute(conn).await.map(drop)
}

//! Tenants: created (idempotently when asked), read, listed a page at a time; their settings
//! (payloads kept for replay, redelivery's schedule, whether read-only portals read payloads).
//! Nothing of a tenant is kept between calls: each reading is the row as it is.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::ports::Tenants;
use doorman_domain::{
    AuditEntry, Created, Idempotency, NewTenant, Page, PageRequest, RedeliverySchedule, StorageError,
    TenantCursor, TenantId, TenantName, TenantRecord, TenantSearch,
};
use uuid::Uuid;

use super::{Stop, audit};
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, across_tenants, act_for};
use crate::postgres::schema::{
    admin_idempotency, deleted_tenants, messaging_event_attempts, messaging_event_payloads,
    messaging_request_replays, messaging_workspaces, tenants,
};
use crate::secrets::token_hash;

/// How long an idempotency key is remembered: a repeat after that creates again.
const KEY_MEMORY: &str = "24 hours";

#[derive(Debug, Clone)]
pub struct PgTenants {
    pool: PgPool,
}

impl PgTenants {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

type Row = (Uuid, String, DateTime<Utc>, bool, Option<Vec<Option<i32>>>, bool);

const COLUMNS: (
    tenants::id,
    tenants::name,
    tenants::created_at,
    tenants::retain_payloads,
    tenants::redelivery_schedule,
    tenants::read_only_portals_read_payloads,
) = (
    tenants::id,
    tenants::name,
    tenants::created_at,
    tenants::retain_payloads,
    tenants::redelivery_schedule,
    tenants::read_only_portals_read_payloads,
);

/// `text` in a `LIKE` pattern, as text: its `\`, `%` and `_` escaped.
fn as_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// `ILIKE` matching `text` anywhere, as text.
fn contains_pattern(text: &str) -> String {
    format!("%{}%", as_text(text))
}

/// A tenant that support's search text finds: part of its name (ignoring case), the start of
/// its id (ignoring case), or a Slack team or enterprise id of one of its workspaces (read
/// across tenants by `doorman_admin` only in a transaction that says so, as the tenants are).
fn found_by(
    text: &str,
) -> Box<dyn BoxableExpression<tenants::table, diesel::pg::Pg, SqlType = diesel::sql_types::Bool>> {
    let id_prefix = format!("{}%", as_text(&text.to_lowercase()));
    let workspaces = messaging_workspaces::table
        .filter(
            messaging_workspaces::team_id
                .eq(text.to_owned())
                .or(messaging_workspaces::enterprise_id.eq(text.to_owned())),
        )
        .select(messaging_workspaces::tenant_id);
    Box::new(
        tenants::name
            .ilike(contains_pattern(text))
            .or(diesel::dsl::sql::<diesel::sql_types::Text>("tenants.id::text").like(id_prefix))
            .or(tenants::id.eq_any(workspaces)),
    )
}

/// The tenants a listing finds (`only` that one; each of `search` narrowing), in no order: its
/// pages add their cursor and order, its total a limit.
fn found<'a>(only: Option<TenantId>, search: &[TenantSearch]) -> tenants::BoxedQuery<'a, diesel::pg::Pg> {
    let mut query = tenants::table.into_boxed();
    if let Some(tenant) = only {
        query = query.filter(tenants::id.eq(*tenant.as_uuid()));
    }
    for narrowing in search {
        query = match narrowing {
            TenantSearch::Name(text) => query.filter(tenants::name.ilike(contains_pattern(text.as_str()))),
            TenantSearch::Anything(text) => query.filter(found_by(text.as_str())),
        };
    }
    query
}

/// A stored tenant read back: its schedule went through the same constructor when it was
/// written (and the table's check holds it to the same bounds).
fn record(
    (id, name, created_at, retain_payloads, schedule, read_only_portals_read_payloads): Row,
) -> Result<TenantRecord, StorageError> {
    let redelivery = schedule
        .map(|delays| {
            let seconds: Option<Vec<i64>> = delays.into_iter().map(|d| d.map(i64::from)).collect();
            let seconds = seconds.ok_or_else(|| {
                StorageError::Unexpected(format!("tenant {id}'s stored redelivery schedule has a null delay"))
            })?;
            RedeliverySchedule::from_seconds(&seconds).map_err(|e| {
                StorageError::Unexpected(format!("tenant {id}'s stored redelivery schedule: {e}"))
            })
        })
        .transpose()?;
    Ok(TenantRecord {
        id: TenantId::from_uuid(id),
        name,
        created_at,
        retain_payloads,
        redelivery,
        read_only_portals_read_payloads,
    })
}

/// A schedule as stored: its delays in seconds, or null for off.
fn stored(schedule: Option<&RedeliverySchedule>) -> Option<Vec<Option<i32>>> {
    schedule.map(|s| {
        // Each delay is at most a day (`RedeliverySchedule::MAX_DELAY`): it fits an integer.
        s.seconds().into_iter().map(|d| Some(i32::try_from(d).unwrap_or(i32::MAX))).collect()
    })
}

/// One of a tenant's settings, as [`PgTenants::set`] writes it.
enum Setting<'a> {
    RetainPayloads(bool),
    ReadOnlyPortalsReadPayloads(bool),
    Redelivery(Option<&'a RedeliverySchedule>),
    Name(&'a TenantName),
}

impl PgTenants {
    /// Writes one of `tenant`'s settings and its audit entry, in one transaction acting for the
    /// tenant (row-level security holds it to that tenant's row).
    async fn set(
        &self,
        tenant: TenantId,
        setting: Setting<'_>,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let row = tenants::table.filter(tenants::id.eq(tenant.as_uuid()));
                let update = diesel::update(row);
                match setting {
                    Setting::RetainPayloads(on) => {
                        update.set(tenants::retain_payloads.eq(on)).execute(conn).await?
                    }
                    Setting::ReadOnlyPortalsReadPayloads(on) => {
                        update.set(tenants::read_only_portals_read_payloads.eq(on)).execute(conn).await?
                    }
                    Setting::Redelivery(schedule) => {
                        update.set(tenants::redelivery_schedule.eq(stored(schedule))).execute(conn).await?
                    }
                    Setting::Name(name) => update.set(tenants::name.eq(name.as_str())).execute(conn).await?,
                };
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }
}

impl Tenants for PgTenants {
    /// The idempotency row goes in with the tenant, under a transaction-scoped advisory lock
    /// of the scope and key taken first without waiting: a second creation with the key while
    /// the first's transaction is open finds the lock taken and answers `InProgress` at once;
    /// one after it finds the row, rolls back its tenant, and answers with the first one's.
    async fn create(
        &self,
        tenant: &NewTenant,
        idempotency: Option<Idempotency>,
        audit: &AuditEntry,
    ) -> Result<Created, StorageError> {
        let mut unit = self.pool.unit().await?;
        let fingerprint = idempotency.as_ref().map(|i| token_hash(&i.fingerprint));
        let created = unit
            .transaction::<_, Stop<Repeat>, _>(async |conn| {
                act_for(conn, tenant.id).await?;
                if let Some(idempotency) = &idempotency
                    && !lock_key(conn, idempotency).await?
                {
                    return Err(Stop::Answer(Repeat::InProgress));
                }
                let row: Row = diesel::insert_into(tenants::table)
                    .values((tenants::id.eq(tenant.id.as_uuid()), tenants::name.eq(tenant.name.as_str())))
                    .returning(COLUMNS)
                    .get_result(conn)
                    .await?;
                if let (Some(idempotency), Some(fingerprint)) = (&idempotency, &fingerprint) {
                    diesel::sql_query(format!(
                        "DELETE FROM admin_idempotency WHERE scope = $1 AND key = $2 \
                          AND created_at < now() - interval '{KEY_MEMORY}'"
                    ))
                    .bind::<diesel::sql_types::Text, _>(&idempotency.scope)
                    .bind::<diesel::sql_types::Text, _>(idempotency.key.as_str())
                    .execute(conn)
                    .await?;
                    let remembered = diesel::insert_into(admin_idempotency::table)
                        .values((
                            admin_idempotency::scope.eq(&idempotency.scope),
                            admin_idempotency::key.eq(idempotency.key.as_str()),
                            admin_idempotency::fingerprint.eq(fingerprint),
                            admin_idempotency::tenant_id.eq(tenant.id.as_uuid()),
                        ))
                        .on_conflict_do_nothing()
                        .execute(conn)
                        .await?;
                    if remembered == 0 {
                        return Err(Stop::Answer(Repeat::Answered));
                    }
                }
                audit::write(conn, audit).await?;
                Ok(row)
            })
            .await;
        let outcome = async {
            match created {
                Ok(row) => Ok(Created::New(record(row)?)),
                Err(stop) => {
                    if stop.into_result()? == Repeat::InProgress {
                        return Ok(Created::InProgress);
                    }
                    let (Some(idempotency), Some(fingerprint)) = (idempotency, fingerprint) else {
                        return Err(StorageError::Unexpected("an idempotent repeat without a key".into()));
                    };
                    first_answer(&mut unit, &idempotency, &fingerprint).await
                }
            }
        }
        .await;
        unit.finish(outcome).await
    }

    async fn get(&self, tenant: TenantId) -> Result<Option<TenantRecord>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                tenants::table
                    .filter(tenants::id.eq(tenant.as_uuid()))
                    .select(COLUMNS)
                    .first::<Row>(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel);
        unit.finish(found).await?.map(record).transpose()
    }

    async fn list(
        &self,
        only: Option<TenantId>,
        search: Vec<TenantSearch>,
        page: &PageRequest<TenantCursor>,
    ) -> Result<Page<TenantRecord, TenantCursor>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let page = page.clone();
        let rows: Result<Vec<Row>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                match only {
                    Some(tenant) => act_for(conn, tenant).await?,
                    None => across_tenants(conn).await?,
                }
                let mut query = found(only, &search);
                if let Some(after) = page.after {
                    query = query.filter(tenants::created_at.gt(after.created_at).or(
                        tenants::created_at.eq(after.created_at).and(tenants::id.gt(*after.id.as_uuid())),
                    ));
                }
                query
                    .order((tenants::created_at.asc(), tenants::id.asc()))
                    .limit(i64::from(page.limit.get()) + 1)
                    .select(COLUMNS)
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        let records = rows.into_iter().map(record).collect::<Result<_, _>>()?;
        Ok(Page::from_overfetch(records, page.limit, |t: &TenantRecord| TenantCursor {
            created_at: t.created_at,
            id: t.id,
        }))
    }

    /// At most `up_to` rows of what `list` finds are read (a constant each) and counted.
    async fn count(
        &self,
        only: Option<TenantId>,
        search: Vec<TenantSearch>,
        up_to: u64,
    ) -> Result<u64, StorageError> {
        let mut unit = self.pool.unit().await?;
        let limit = i64::try_from(up_to).unwrap_or(i64::MAX);
        let rows: Result<Vec<i32>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                match only {
                    Some(tenant) => act_for(conn, tenant).await?,
                    None => across_tenants(conn).await?,
                }
                found(only, &search)
                    .select(diesel::dsl::sql::<diesel::sql_types::Integer>("1"))
                    .limit(limit)
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        Ok(unit.finish(rows).await?.len() as u64)
    }

    async fn set_retain_payloads(
        &self,
        tenant: TenantId,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        self.set(tenant, Setting::RetainPayloads(on), audit).await
    }

    async fn set_read_only_portals_read_payloads(
        &self,
        tenant: TenantId,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        self.set(tenant, Setting::ReadOnlyPortalsReadPayloads(on), audit).await
    }

    async fn set_redelivery(
        &self,
        tenant: TenantId,
        schedule: Option<RedeliverySchedule>,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        self.set(tenant, Setting::Redelivery(schedule.as_ref()), audit).await
    }

    async fn rename(
        &self,
        tenant: TenantId,
        name: &TenantName,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        self.set(tenant, Setting::Name(name), audit).await
    }

    /// One transaction acting for the tenant: it is remembered as deleted, its kept payloads
    /// and request fingerprints go, and deleting its row takes its directory with it (the
    /// foreign keys' cascades; the directory's triggers tell every serving process).
    async fn delete(&self, tenant: TenantId, audit: &AuditEntry) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let deleted = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let name: Option<String> = tenants::table
                    .filter(tenants::id.eq(tenant.as_uuid()))
                    .select(tenants::name)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let Some(name) = name else { return Ok(false) };
                diesel::insert_into(deleted_tenants::table)
                    .values((
                        deleted_tenants::tenant_id.eq(tenant.as_uuid()),
                        deleted_tenants::name.eq(&name),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                purge_kept(conn, tenant).await?;
                diesel::delete(tenants::table.filter(tenants::id.eq(tenant.as_uuid()))).execute(conn).await?;
                audit::write(conn, audit).await?;
                Ok(true)
            })
            .await
            .map_err(from_diesel);
        unit.finish(deleted).await
    }

    async fn was_deleted(&self, tenant: TenantId) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::select(diesel::dsl::exists(
                    deleted_tenants::table.filter(deleted_tenants::tenant_id.eq(tenant.as_uuid())),
                ))
                .get_result::<bool>(conn)
                .await
            })
            .await
            .map_err(from_diesel);
        unit.finish(found).await
    }

    async fn purge_receipts(&self, tenant: TenantId, batch: u32) -> Result<u64, StorageError> {
        let mut unit = self.pool.unit().await?;
        let purged = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                purge_deleted_tenant(conn, tenant, batch).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(purged).await
    }
}

/// A deleted (or being deleted) tenant's kept payloads, request fingerprints and attempts.
async fn purge_kept(conn: &mut AsyncPgConnection, tenant: TenantId) -> Result<(), diesel::result::Error> {
    diesel::delete(
        messaging_event_attempts::table.filter(messaging_event_attempts::tenant_id.eq(tenant.as_uuid())),
    )
    .execute(conn)
    .await?;
    diesel::delete(
        messaging_event_payloads::table.filter(messaging_event_payloads::tenant_id.eq(tenant.as_uuid())),
    )
    .execute(conn)
    .await?;
    diesel::delete(
        messaging_request_replays::table.filter(messaging_request_replays::tenant_id.eq(tenant.as_uuid())),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// What a deleted tenant left: its kept payloads and fingerprints, and at most `batch` of its
/// receipts; how many receipts went. Each statement names the tenant, so on Citus it is
/// routed to the tenant's shard.
pub(crate) async fn purge_deleted_tenant(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    batch: u32,
) -> Result<u64, diesel::result::Error> {
    purge_kept(conn, tenant).await?;
    let deleted = diesel::sql_query(
        "DELETE FROM messaging_event_receipts AS r \
          WHERE r.tenant_id = $1 AND (r.tenant_id, r.platform, r.external_event_id) IN ( \
                SELECT e.tenant_id, e.platform, e.external_event_id FROM messaging_event_receipts AS e \
                 WHERE e.tenant_id = $1 LIMIT $2)",
    )
    .bind::<diesel::sql_types::Uuid, _>(tenant.as_uuid())
    .bind::<diesel::sql_types::BigInt, _>(i64::from(batch))
    .execute(conn)
    .await?;
    Ok(deleted as u64)
}

/// Why a creation under an idempotency key rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    /// Another creation under the key holds its lock: still being processed.
    InProgress,
    /// The key's row is there: a request under it was answered before.
    Answered,
}

/// Takes the idempotency key's lock for this transaction, if no other transaction holds it;
/// `false` when one does (never waits). Keyed by a hash of the scope and key: two keys
/// sharing a hash only ever make a concurrent repeat of the other answer "in progress".
async fn lock_key(
    conn: &mut AsyncPgConnection,
    idempotency: &Idempotency,
) -> Result<bool, diesel::result::Error> {
    #[derive(QueryableByName)]
    struct Locked {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        locked: bool,
    }
    let name = format!("admin_idempotency {} {}", idempotency.scope, idempotency.key.as_str());
    let Locked { locked } =
        diesel::sql_query("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked")
            .bind::<diesel::sql_types::Text, _>(name)
            .get_result(conn)
            .await?;
    Ok(locked)
}

/// The tenant the first request under this key created, or `KeyReused` when that request
/// asked for something else. On the connection the creation rolled back on: waiting for a
/// second one while holding it could exhaust the pool under a burst of repeats.
async fn first_answer(
    conn: &mut AsyncPgConnection,
    idempotency: &Idempotency,
    fingerprint: &str,
) -> Result<Created, StorageError> {
    let found: Option<(String, Row)> = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            across_tenants(conn).await?;
            admin_idempotency::table
                .inner_join(tenants::table)
                .filter(admin_idempotency::scope.eq(&idempotency.scope))
                .filter(admin_idempotency::key.eq(idempotency.key.as_str()))
                .select((admin_idempotency::fingerprint, COLUMNS))
                .first(conn)
                .await
                .optional()
        })
        .await
        .map_err(from_diesel)?;
    match found {
        Some((stored, row)) if stored == fingerprint => Ok(Created::Repeated(record(row)?)),
        Some(_) => Ok(Created::KeyReused),
        // The first request's tenant is gone (deleted with its key): nothing to repeat.
        None => {
            Err(StorageError::Unavailable("the idempotency key's first request is gone; try again".into()))
        }
    }
}

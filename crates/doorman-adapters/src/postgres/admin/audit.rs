//! The audit trail: written by every change in its own transaction, listed newest first.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::ports::AuditTrail;
use doorman_domain::{
    AuditCursor, AuditEntry, AuditFilter, AuditRecord, Page, PageRequest, StorageError, TenantId,
};
use uuid::Uuid;

use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, across_tenants, act_for};
use crate::postgres::schema::admin_audit;

/// Writes `entry` on `conn`, inside the transaction making the change it describes.
pub(crate) async fn write(
    conn: &mut AsyncPgConnection,
    entry: &AuditEntry,
) -> Result<(), diesel::result::Error> {
    diesel::insert_into(admin_audit::table)
        .values((
            admin_audit::actor_kind.eq(entry.actor_kind()),
            admin_audit::actor_id.eq(entry.actor_id()),
            admin_audit::actor_name.eq(entry.actor_name()),
            admin_audit::action.eq(entry.action.as_str()),
            admin_audit::tenant_id.eq(entry.tenant.map(|t| *t.as_uuid())),
            admin_audit::target.eq(entry.target.as_deref()),
            admin_audit::request_id.eq(entry.caller.request.as_str()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

#[derive(Debug, Clone)]
pub struct PgAuditTrail {
    pool: PgPool,
}

impl PgAuditTrail {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

type Row = (
    i64,
    chrono::DateTime<chrono::Utc>,
    String,
    String,
    String,
    String,
    Option<Uuid>,
    Option<String>,
    String,
);

impl AuditTrail for PgAuditTrail {
    async fn record(&self, entry: &AuditEntry) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                if let Some(tenant) = entry.tenant {
                    act_for(conn, tenant).await?;
                }
                write(conn, entry).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn list(
        &self,
        tenant: Option<TenantId>,
        filter: &AuditFilter,
        page: &PageRequest<AuditCursor>,
    ) -> Result<Page<AuditRecord, AuditCursor>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let page = page.clone();
        let filter = filter.clone();
        let rows: Result<Vec<Row>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let mut query = admin_audit::table.into_boxed();
                match tenant {
                    Some(tenant) => {
                        act_for(conn, tenant).await?;
                        query = query.filter(admin_audit::tenant_id.eq(*tenant.as_uuid()));
                    }
                    None => across_tenants(conn).await?,
                }
                // Each is served by an index ending in (at DESC, id DESC): by action, by actor,
                // by tenant, or the trail's own for a window alone (migration
                // 2026-12-09-000001_audit_found_by_action_and_key).
                if let Some(action) = filter.action {
                    query = query.filter(admin_audit::action.eq(action.as_str()));
                }
                if let Some(key) = filter.key {
                    query = query
                        .filter(admin_audit::actor_kind.eq("key"))
                        .filter(admin_audit::actor_id.eq(key.to_string()));
                }
                if let Some(since) = filter.since {
                    query = query.filter(admin_audit::at.ge(since));
                }
                if let Some(until) = filter.until {
                    query = query.filter(admin_audit::at.lt(until));
                }
                if let Some(after) = page.after {
                    query = query.filter(
                        admin_audit::at
                            .lt(after.at)
                            .or(admin_audit::at.eq(after.at).and(admin_audit::id.lt(after.id))),
                    );
                }
                query
                    .order((admin_audit::at.desc(), admin_audit::id.desc()))
                    .limit(i64::from(page.limit.get()) + 1)
                    .select((
                        admin_audit::id,
                        admin_audit::at,
                        admin_audit::actor_kind,
                        admin_audit::actor_id,
                        admin_audit::actor_name,
                        admin_audit::action,
                        admin_audit::tenant_id,
                        admin_audit::target,
                        admin_audit::request_id,
                    ))
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        let records = rows
            .into_iter()
            .map(|(id, at, actor_kind, actor_id, actor_name, action, tenant, target, request_id)| {
                AuditRecord {
                    id,
                    at,
                    actor_kind,
                    actor_id,
                    actor_name,
                    action,
                    tenant: tenant.map(TenantId::from_uuid),
                    target,
                    request_id,
                }
            })
            .collect();
        Ok(Page::from_overfetch(records, page.limit, |r: &AuditRecord| AuditCursor { at: r.at, id: r.id }))
    }
}

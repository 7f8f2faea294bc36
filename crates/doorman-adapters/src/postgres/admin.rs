//! Operator queries: provisioning tenants and listing or pruning receipts.
//!
//! These run on an owner connection (see [`super::pool::connect_owner`]), not the server
//! pool: they act across tenants on purpose, and row-level security does not apply to the
//! tables' owner. Each takes the connection explicitly so a command can run several in a row.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{BigInt, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use doorman_domain::{
    ExternalEventId, Failure, Platform, Receipt, ReceiptKey, StorageError, TenantId, WorkspaceId,
};
use thiserror::Error;
use uuid::Uuid;

use super::errors::from_diesel;
use super::schema::{agent_bridges, messaging_event_receipts as receipts, messaging_workspaces, tenants};

/// Why an operator command could not do what it was asked.
#[derive(Debug, Error)]
pub enum AdminError {
    #[error("no tenant with id {0}")]
    UnknownTenant(TenantId),
    #[error("tenant {0} has no agent configured; run `doorman agent set` first")]
    NoAgent(TenantId),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Creates a tenant and returns its new id.
pub async fn create_tenant(conn: &mut AsyncPgConnection, name: &str) -> Result<TenantId, AdminError> {
    let id = TenantId::generate();
    diesel::insert_into(tenants::table)
        .values((tenants::id.eq(id.as_uuid()), tenants::name.eq(name)))
        .execute(conn)
        .await
        .map_err(|e| match e {
            DieselError::DatabaseError(DatabaseErrorKind::CheckViolation, _) => {
                AdminError::Conflict("a tenant name must be 1 to 200 characters".into())
            }
            other => from_diesel(other).into(),
        })?;
    Ok(id)
}

/// Links a workspace to a tenant: a team (optionally inside an enterprise), or with only an
/// enterprise id an org-wide install. A workspace already linked (to any tenant) is refused.
pub async fn link_workspace(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    platform: Platform,
    team_id: Option<&WorkspaceId>,
    enterprise_id: Option<&WorkspaceId>,
) -> Result<(), AdminError> {
    ensure_tenant(conn, tenant).await?;
    diesel::insert_into(messaging_workspaces::table)
        .values((
            messaging_workspaces::tenant_id.eq(tenant.as_uuid()),
            messaging_workspaces::platform.eq(platform.as_str()),
            messaging_workspaces::team_id.eq(team_id.map(WorkspaceId::as_str)),
            messaging_workspaces::enterprise_id.eq(enterprise_id.map(WorkspaceId::as_str)),
        ))
        .execute(conn)
        .await
        .map_err(|e| match e {
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                AdminError::Conflict("that workspace is already linked to a tenant".into())
            }
            DieselError::DatabaseError(DatabaseErrorKind::CheckViolation, _) => {
                AdminError::Conflict("a workspace needs a team id or an enterprise id".into())
            }
            other => from_diesel(other).into(),
        })?;
    Ok(())
}

/// Sets (or replaces) a tenant's agent URL and dispatch signing secret; the bridge starts
/// (or stays) unpaused only if it was not paused before.
pub async fn set_agent(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    url: &str,
    secret: &str,
) -> Result<(), AdminError> {
    ensure_tenant(conn, tenant).await?;
    diesel::insert_into(agent_bridges::table)
        .values((
            agent_bridges::tenant_id.eq(tenant.as_uuid()),
            agent_bridges::url.eq(url),
            agent_bridges::signing_secret.eq(secret),
        ))
        .on_conflict(agent_bridges::tenant_id)
        .do_update()
        .set((
            agent_bridges::url.eq(url),
            agent_bridges::signing_secret.eq(secret),
            agent_bridges::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map_err(from_diesel)?;
    Ok(())
}

/// Pauses or resumes a tenant's bridge. A paused bridge answers deliveries 503.
pub async fn set_paused(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    paused: bool,
) -> Result<(), AdminError> {
    ensure_tenant(conn, tenant).await?;
    let updated = diesel::update(agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())))
        .set((agent_bridges::paused.eq(paused), agent_bridges::updated_at.eq(diesel::dsl::now)))
        .execute(conn)
        .await
        .map_err(from_diesel)?;
    if updated == 0 {
        return Err(AdminError::NoAgent(tenant));
    }
    Ok(())
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = receipts)]
struct ReceiptRow {
    tenant_id: Uuid,
    platform: String,
    external_event_id: String,
    event_type: String,
    delivery_attempt: i32,
    claimed_at: DateTime<Utc>,
    handled_at: Option<DateTime<Utc>>,
    failure_reason: Option<String>,
    failed_at: Option<DateTime<Utc>>,
}

impl ReceiptRow {
    fn into_receipt(self) -> Result<Receipt, StorageError> {
        let unreadable =
            |what: &str| StorageError::Unexpected(format!("stored receipt has an invalid {what}"));
        Ok(Receipt {
            key: ReceiptKey {
                tenant: TenantId::from_uuid(self.tenant_id),
                platform: self.platform.parse::<Platform>().map_err(|_| unreadable("platform"))?,
                external_id: ExternalEventId::new(self.external_event_id)
                    .map_err(|_| unreadable("event id"))?,
            },
            event_type: self.event_type,
            attempt: u32::try_from(self.delivery_attempt).unwrap_or(0),
            claimed_at: self.claimed_at,
            handled_at: self.handled_at,
            failure: match (self.failure_reason, self.failed_at) {
                (Some(reason), Some(at)) => Some(Failure { reason, at }),
                _ => None,
            },
        })
    }
}

/// The most rows a listing returns; listings are for eyes and scripts, not exports.
pub const LISTING_LIMIT: i64 = 1000;

/// Receipts claimed before `claimed_before`, never handled, with no failure recorded:
/// events acknowledged to the platform that reached nobody (decision 3). Oldest first.
pub async fn stranded(
    conn: &mut AsyncPgConnection,
    claimed_before: DateTime<Utc>,
    tenant: Option<TenantId>,
) -> Result<Vec<Receipt>, StorageError> {
    let query = receipts::table
        .filter(receipts::handled_at.is_null())
        .filter(receipts::failure_reason.is_null())
        .filter(receipts::claimed_at.lt(claimed_before))
        .order(receipts::claimed_at.asc())
        .into_boxed();
    list(conn, query, tenant).await
}

/// Receipts whose dispatch failed (and were never handled). Newest failure first.
pub async fn failed(
    conn: &mut AsyncPgConnection,
    tenant: Option<TenantId>,
) -> Result<Vec<Receipt>, StorageError> {
    let query = receipts::table
        .filter(receipts::handled_at.is_null())
        .filter(receipts::failure_reason.is_not_null())
        .order(receipts::failed_at.desc())
        .into_boxed();
    list(conn, query, tenant).await
}

/// Runs a listing, narrowed to one tenant if asked, at most [`LISTING_LIMIT`] rows.
async fn list(
    conn: &mut AsyncPgConnection,
    mut query: receipts::BoxedQuery<'static, diesel::pg::Pg>,
    tenant: Option<TenantId>,
) -> Result<Vec<Receipt>, StorageError> {
    if let Some(tenant) = tenant {
        query = query.filter(receipts::tenant_id.eq(*tenant.as_uuid()));
    }
    let rows: Vec<ReceiptRow> =
        query.limit(LISTING_LIMIT).select(ReceiptRow::as_select()).load(conn).await.map_err(from_diesel)?;
    rows.into_iter().map(ReceiptRow::into_receipt).collect()
}

/// Deletes every tenant's receipts claimed before `claimed_before`, `batch` rows per
/// statement (each its own short transaction), until none are left. Returns the total.
pub async fn prune_all(
    conn: &mut AsyncPgConnection,
    claimed_before: DateTime<Utc>,
    batch: u32,
) -> Result<u64, StorageError> {
    let mut total = 0u64;
    loop {
        let deleted = diesel::sql_query(PRUNE_ALL_BATCH)
            .bind::<Timestamptz, _>(claimed_before)
            .bind::<BigInt, _>(i64::from(batch.max(1)))
            .execute(conn)
            .await
            .map_err(from_diesel)?;
        total += deleted as u64;
        if deleted < batch.max(1) as usize {
            return Ok(total);
        }
    }
}

const PRUNE_ALL_BATCH: &str = "\
    DELETE FROM messaging_event_receipts \
     WHERE (tenant_id, platform, external_event_id) IN ( \
        SELECT tenant_id, platform, external_event_id FROM messaging_event_receipts \
         WHERE claimed_at < $1 \
         LIMIT $2)";

async fn ensure_tenant(conn: &mut AsyncPgConnection, tenant: TenantId) -> Result<(), AdminError> {
    let found: i64 = tenants::table
        .filter(tenants::id.eq(tenant.as_uuid()))
        .count()
        .get_result(conn)
        .await
        .map_err(from_diesel)?;
    if found == 0 {
        return Err(AdminError::UnknownTenant(tenant));
    }
    Ok(())
}

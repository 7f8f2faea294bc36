//! The operator side: provisioning tenants and listing or pruning receipts.
//!
//! [`PgOperator`] owns an owner connection (no role switch), not a server-pool connection:
//! operator actions cross tenants on purpose, and row-level security does not apply to the
//! tables' owner. Errors are the domain's [`OperatorError`], worded for any front end; the CLI
//! adds its own hints.

use std::fmt;
use std::num::NonZeroU32;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{BigInt, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::{
    AgentSecret, AgentUrl, ExternalEventId, Failure, OperatorError, Platform, Receipt, ReceiptKey,
    StorageError, TenantId, TenantName, ValidationError, WorkspaceId, WorkspaceRef,
};
use uuid::Uuid;

use super::directory::AGENT_SECRET_COLUMN;
use super::errors::{from_connection, from_diesel};
use super::schema::{agent_bridges, messaging_event_receipts as receipts, messaging_workspaces, tenants};
use crate::secrets::{Keyring, OpenError, SealedIn};

/// The most rows a listing returns; listings are for eyes and scripts, not exports.
pub const LISTING_LIMIT: i64 = 1000;

/// Operator actions on one owner connection.
pub struct PgOperator {
    conn: AsyncPgConnection,
}

impl fmt::Debug for PgOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PgOperator")
    }
}

impl PgOperator {
    /// Connects as the URL's user, who must own the tables (the user `doorman migrate` ran as).
    pub async fn connect(database_url: &str) -> Result<Self, StorageError> {
        let conn = AsyncPgConnection::establish(database_url).await.map_err(from_connection)?;
        Ok(Self { conn })
    }

    /// Creates a tenant and returns its new id.
    pub async fn create_tenant(&mut self, name: &TenantName) -> Result<TenantId, OperatorError> {
        let id = TenantId::generate();
        diesel::insert_into(tenants::table)
            .values((tenants::id.eq(id.as_uuid()), tenants::name.eq(name.as_str())))
            .execute(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        Ok(id)
    }

    /// Links a workspace to a tenant: a team (possibly inside an enterprise), or an org-wide
    /// install by its enterprise. A workspace already linked, to any tenant, is refused.
    pub async fn link_workspace(
        &mut self,
        tenant: TenantId,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<(), OperatorError> {
        self.ensure_tenant(tenant).await?;
        diesel::insert_into(messaging_workspaces::table)
            .values((
                messaging_workspaces::tenant_id.eq(tenant.as_uuid()),
                messaging_workspaces::platform.eq(platform.as_str()),
                messaging_workspaces::team_id.eq(workspace.team_id().map(WorkspaceId::as_str)),
                messaging_workspaces::enterprise_id.eq(workspace.enterprise_id().map(WorkspaceId::as_str)),
            ))
            .execute(&mut self.conn)
            .await
            .map_err(|e| match e {
                DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                    OperatorError::WorkspaceTaken
                }
                other => from_diesel(other).into(),
            })?;
        Ok(())
    }

    /// Sets (or replaces) a tenant's agent URL and dispatch signing secret, the secret sealed
    /// with the current key for this tenant's row. A bridge that was paused stays paused.
    pub async fn set_agent(
        &mut self,
        tenant: TenantId,
        url: &AgentUrl,
        secret: &AgentSecret,
        keys: &Keyring,
    ) -> Result<(), OperatorError> {
        self.ensure_tenant(tenant).await?;
        let sealed =
            keys.seal(secret.expose_whsec().as_bytes(), SealedIn { tenant, column: AGENT_SECRET_COLUMN });
        let (url, secret) = (url.as_str(), sealed);
        diesel::insert_into(agent_bridges::table)
            .values((
                agent_bridges::tenant_id.eq(tenant.as_uuid()),
                agent_bridges::url.eq(url),
                agent_bridges::signing_secret.eq(&secret),
            ))
            .on_conflict(agent_bridges::tenant_id)
            .do_update()
            .set((
                agent_bridges::url.eq(url),
                agent_bridges::signing_secret.eq(&secret),
                agent_bridges::updated_at.eq(diesel::dsl::now),
            ))
            .execute(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        Ok(())
    }

    /// Pauses or resumes a tenant's bridge. A paused bridge answers deliveries 503.
    pub async fn set_paused(&mut self, tenant: TenantId, paused: bool) -> Result<(), OperatorError> {
        self.ensure_tenant(tenant).await?;
        let updated =
            diesel::update(agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())))
                .set((agent_bridges::paused.eq(paused), agent_bridges::updated_at.eq(diesel::dsl::now)))
                .execute(&mut self.conn)
                .await
                .map_err(from_diesel)?;
        if updated == 0 {
            return Err(OperatorError::NoAgent(tenant));
        }
        Ok(())
    }

    /// Re-seals every stored secret that is not sealed with the current key (or not sealed
    /// at all: stored before encryption), `batch` rows per transaction, so it can be stopped
    /// and run again at any point. Stops at the first value no configured key opens, naming
    /// its tenant and key.
    pub async fn rotate_secrets(
        &mut self,
        keys: &Keyring,
        batch: NonZeroU32,
    ) -> Result<Rotation, OperatorError> {
        let current = format!("v1:{}:%", keys.current());
        let mut rotation = Rotation::default();
        loop {
            let done = self
                .conn
                .transaction::<_, RotationError, _>(async |conn| {
                    let rows: Vec<(Uuid, String)> = agent_bridges::table
                        .filter(agent_bridges::signing_secret.not_like(&current))
                        .select((agent_bridges::tenant_id, agent_bridges::signing_secret))
                        .order(agent_bridges::tenant_id)
                        .limit(i64::from(batch.get()))
                        .for_update()
                        .skip_locked()
                        .load(conn)
                        .await?;
                    for (tenant, stored) in &rows {
                        let tenant = TenantId::from_uuid(*tenant);
                        let place = SealedIn { tenant, column: AGENT_SECRET_COLUMN };
                        let plaintext = match keys.open(stored, place) {
                            Ok(plaintext) => plaintext,
                            Err(OpenError::NotSealed) => stored.as_bytes().to_vec(),
                            Err(problem) => return Err(RotationError::Unopenable(tenant, problem)),
                        };
                        diesel::update(
                            agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())),
                        )
                        .set(agent_bridges::signing_secret.eq(keys.seal(&plaintext, place)))
                        .execute(conn)
                        .await?;
                    }
                    Ok(rows.len())
                })
                .await
                .map_err(|e| match e {
                    RotationError::Database(e) => OperatorError::Storage(from_diesel(e)),
                    RotationError::Unopenable(tenant, problem) => OperatorError::Storage(
                        StorageError::Unexpected(format!("the agent secret of tenant {tenant}: {problem}")),
                    ),
                })?;
            rotation.resealed += done as u64;
            if done < batch.get() as usize {
                return Ok(rotation);
            }
        }
    }

    /// Receipts claimed before `claimed_before`, never handled, with no failure recorded:
    /// events acknowledged to the platform that reached nobody (decision 3). Oldest first.
    pub async fn stranded(
        &mut self,
        claimed_before: DateTime<Utc>,
        tenant: Option<TenantId>,
    ) -> Result<Vec<Receipt>, StorageError> {
        let query = receipts::table
            .filter(receipts::handled_at.is_null())
            .filter(receipts::failure_reason.is_null())
            .filter(receipts::claimed_at.lt(claimed_before))
            .order(receipts::claimed_at.asc())
            .into_boxed();
        self.list(query, tenant).await
    }

    /// Receipts whose dispatch failed (and were never handled). Newest failure first.
    pub async fn failed(&mut self, tenant: Option<TenantId>) -> Result<Vec<Receipt>, StorageError> {
        let query = receipts::table
            .filter(receipts::handled_at.is_null())
            .filter(receipts::failure_reason.is_not_null())
            .order(receipts::failed_at.desc())
            .into_boxed();
        self.list(query, tenant).await
    }

    /// Deletes every tenant's receipts claimed before `expired_before`, tenant by tenant and
    /// at most `batch` rows per statement (each its own short transaction), with the same
    /// bounded prune a completed dispatch runs. Returns how many were deleted.
    pub async fn prune_expired(
        &mut self,
        expired_before: DateTime<Utc>,
        batch: NonZeroU32,
    ) -> Result<u64, StorageError> {
        let tenant_ids: Vec<Uuid> =
            tenants::table.select(tenants::id).load(&mut self.conn).await.map_err(from_diesel)?;
        let batch = u64::from(batch.get());
        let mut total = 0;
        for tenant in tenant_ids {
            loop {
                let Pruned { pruned } =
                    diesel::sql_query("SELECT doorman_prune_expired_receipts($1, $2, $3) AS pruned")
                        .bind::<SqlUuid, _>(tenant)
                        .bind::<Timestamptz, _>(expired_before)
                        .bind::<BigInt, _>(i64::try_from(batch).unwrap_or(i64::MAX))
                        .get_result(&mut self.conn)
                        .await
                        .map_err(from_diesel)?;
                let pruned = u64::try_from(pruned).unwrap_or(0);
                total += pruned;
                if pruned < batch {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Runs a listing, narrowed to one tenant if asked, at most [`LISTING_LIMIT`] rows.
    async fn list(
        &mut self,
        mut query: receipts::BoxedQuery<'static, diesel::pg::Pg>,
        tenant: Option<TenantId>,
    ) -> Result<Vec<Receipt>, StorageError> {
        if let Some(tenant) = tenant {
            query = query.filter(receipts::tenant_id.eq(*tenant.as_uuid()));
        }
        let rows: Vec<ReceiptRow> = query
            .limit(LISTING_LIMIT)
            .select(ReceiptRow::as_select())
            .load(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter().map(ReceiptRow::into_receipt).collect()
    }

    async fn ensure_tenant(&mut self, tenant: TenantId) -> Result<(), OperatorError> {
        let found: i64 = tenants::table
            .filter(tenants::id.eq(tenant.as_uuid()))
            .count()
            .get_result(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        if found == 0 {
            return Err(OperatorError::UnknownTenant(tenant));
        }
        Ok(())
    }
}

/// What `rotate_secrets` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Secrets sealed again with the current key.
    pub resealed: u64,
}

enum RotationError {
    Database(DieselError),
    Unopenable(TenantId, OpenError),
}

impl From<DieselError> for RotationError {
    fn from(error: DieselError) -> Self {
        Self::Database(error)
    }
}

#[derive(diesel::QueryableByName)]
struct Pruned {
    #[diesel(sql_type = BigInt)]
    pruned: i64,
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
        })
    }
}

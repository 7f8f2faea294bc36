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
    AgentSecret, AgentUrl, OperatorError, Platform, Receipt, ReceiptKey, StorageError, TenantId, TenantName,
    WorkspaceId, WorkspaceRef,
};
use uuid::Uuid;

use super::directory::{AGENT_SECRET_COLUMN, BOT_TOKEN_COLUMN, PAYLOAD_COLUMN, REFRESH_TOKEN_COLUMN};
use super::errors::{from_connection, from_diesel};
use super::receipt_row::ReceiptRow;
use super::schema::{
    agent_bridges, messaging_event_payloads as payloads, messaging_event_receipts as receipts,
    messaging_workspaces, tenants,
};
use crate::secrets::{Keyring, OpenError, SealedIn, random_token, token_hash};

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

    /// Turns keeping payloads for replay on or off for `tenant`. Turning it off stops keeping
    /// new ones; the payloads already kept stay until their events are handled or pruned.
    pub async fn set_retain_payloads(&mut self, tenant: TenantId, on: bool) -> Result<(), OperatorError> {
        self.ensure_tenant(tenant).await?;
        diesel::update(tenants::table.filter(tenants::id.eq(tenant.as_uuid())))
            .set(tenants::retain_payloads.eq(on))
            .execute(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        Ok(())
    }

    /// One receipt, and whether its payload is kept; `None` when there is no such receipt.
    pub async fn receipt(&mut self, key: &ReceiptKey) -> Result<Option<(Receipt, bool)>, StorageError> {
        let row: Option<ReceiptRow> = receipts::table
            .filter(receipts::tenant_id.eq(key.tenant.as_uuid()))
            .filter(receipts::platform.eq(key.platform.as_str()))
            .filter(receipts::external_event_id.eq(key.external_id.as_str()))
            .select(ReceiptRow::as_select())
            .first(&mut self.conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some(row) = row else { return Ok(None) };
        let kept: i64 = payloads::table
            .filter(payloads::tenant_id.eq(key.tenant.as_uuid()))
            .filter(payloads::platform.eq(key.platform.as_str()))
            .filter(payloads::external_event_id.eq(key.external_id.as_str()))
            .count()
            .get_result(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        Ok(Some((row.into_receipt()?, kept > 0)))
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
                .map_err(rotation_error)?;
            rotation.resealed += done as u64;
            if done < batch.get() as usize {
                break;
            }
        }
        loop {
            let done = self.rotate_installation_tokens(keys, &current, batch).await?;
            rotation.resealed += done;
            if done == 0 {
                break;
            }
        }
        loop {
            let done = self.rotate_kept_payloads(keys, &current, batch).await?;
            rotation.resealed += done;
            if done < u64::from(batch.get()) {
                return Ok(rotation);
            }
        }
    }

    /// One batch of kept payloads not sealed with the current key; how many were sealed again.
    async fn rotate_kept_payloads(
        &mut self,
        keys: &Keyring,
        current: &str,
        batch: NonZeroU32,
    ) -> Result<u64, OperatorError> {
        self.conn
            .transaction::<_, RotationError, _>(async |conn| {
                let rows: Vec<(Uuid, String, String, String)> = payloads::table
                    .filter(payloads::payload.not_like(current))
                    .select((
                        payloads::tenant_id,
                        payloads::platform,
                        payloads::external_event_id,
                        payloads::payload,
                    ))
                    .order((payloads::tenant_id, payloads::platform, payloads::external_event_id))
                    .limit(i64::from(batch.get()))
                    .for_update()
                    .skip_locked()
                    .load(conn)
                    .await?;
                for (tenant, platform, event_id, stored) in &rows {
                    let tenant = TenantId::from_uuid(*tenant);
                    let place = SealedIn { tenant, column: PAYLOAD_COLUMN };
                    let plaintext = keys
                        .open(stored, place)
                        .map_err(|problem| RotationError::Unopenable(tenant, problem))?;
                    diesel::update(
                        payloads::table
                            .filter(payloads::tenant_id.eq(tenant.as_uuid()))
                            .filter(payloads::platform.eq(platform))
                            .filter(payloads::external_event_id.eq(event_id)),
                    )
                    .set(payloads::payload.eq(keys.seal(&plaintext, place)))
                    .execute(conn)
                    .await?;
                }
                Ok(rows.len() as u64)
            })
            .await
            .map_err(rotation_error)
    }

    /// One batch of installations whose bot or refresh token is not sealed with the current
    /// key; how many tokens were sealed again.
    async fn rotate_installation_tokens(
        &mut self,
        keys: &Keyring,
        current: &str,
        batch: NonZeroU32,
    ) -> Result<u64, OperatorError> {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = BigInt)]
            id: i64,
            #[diesel(sql_type = SqlUuid)]
            tenant_id: Uuid,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
            bot_token: Option<String>,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
            refresh_token: Option<String>,
        }
        let outcome = self
            .conn
            .transaction::<_, RotationError, _>(async |conn| {
                let rows: Vec<Row> = diesel::sql_query(
                    "SELECT id, tenant_id, bot_token, refresh_token FROM messaging_installations \
                      WHERE bot_token NOT LIKE $1 OR refresh_token NOT LIKE $1 \
                      ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED",
                )
                .bind::<diesel::sql_types::Text, _>(current)
                .bind::<BigInt, _>(i64::from(batch.get()))
                .load(conn)
                .await?;
                let mut resealed = 0;
                for row in rows {
                    let tenant = TenantId::from_uuid(row.tenant_id);
                    let mut reseal =
                        |stored: Option<String>, column| -> Result<Option<String>, RotationError> {
                            let Some(stored) = stored else { return Ok(None) };
                            if keys.is_current(&stored) {
                                return Ok(Some(stored));
                            }
                            let place = SealedIn { tenant, column };
                            let plaintext = match keys.open(&stored, place) {
                                Ok(plaintext) => plaintext,
                                Err(OpenError::NotSealed) => stored.into_bytes(),
                                Err(problem) => return Err(RotationError::Unopenable(tenant, problem)),
                            };
                            resealed += 1;
                            Ok(Some(keys.seal(&plaintext, place)))
                        };
                    let bot = reseal(row.bot_token, BOT_TOKEN_COLUMN)?;
                    let refresh = reseal(row.refresh_token, REFRESH_TOKEN_COLUMN)?;
                    diesel::sql_query(
                        "UPDATE messaging_installations SET bot_token = $2, refresh_token = $3 WHERE id = $1",
                    )
                    .bind::<BigInt, _>(row.id)
                    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(bot)
                    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(refresh)
                    .execute(conn)
                    .await?;
                }
                Ok(resealed)
            })
            .await;
        outcome.map_err(rotation_error)
    }

    /// A new install link for `tenant`, usable for several installs until `expires_at`: the
    /// token to put in its URL (only its hash is stored).
    pub async fn create_install_link(
        &mut self,
        tenant: TenantId,
        expires_at: DateTime<Utc>,
    ) -> Result<String, OperatorError> {
        self.ensure_tenant(tenant).await?;
        let token = random_token();
        diesel::sql_query(
            "INSERT INTO messaging_install_links (token_hash, tenant_id, expires_at) VALUES ($1, $2, $3)",
        )
        .bind::<diesel::sql_types::Text, _>(token_hash(&token))
        .bind::<SqlUuid, _>(tenant.as_uuid())
        .bind::<Timestamptz, _>(expires_at)
        .execute(&mut self.conn)
        .await
        .map_err(from_diesel)?;
        Ok(token)
    }

    /// Installations, of one tenant or all, oldest first: what they are, never their tokens.
    pub async fn installations(
        &mut self,
        tenant: Option<TenantId>,
    ) -> Result<Vec<InstallationSummary>, StorageError> {
        diesel::sql_query(
            "SELECT tenant_id, team_id, enterprise_id, is_enterprise_install, app_id, bot_user_id, scopes,                     bot_token IS NOT NULL AS has_bot_token, token_expires_at, installed_at, updated_at                FROM messaging_installations WHERE $1::uuid IS NULL OR tenant_id = $1               ORDER BY installed_at LIMIT 1000",
        )
        .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(tenant.map(|t| *t.as_uuid()))
        .load(&mut self.conn)
        .await
        .map_err(from_diesel)
    }

    /// Removes `tenant`'s installation of `workspace` and the workspace's link, as the
    /// `app_uninstalled` event does; whether there was anything to remove.
    pub async fn uninstall(
        &mut self,
        tenant: TenantId,
        workspace: &WorkspaceRef,
    ) -> Result<bool, OperatorError> {
        self.ensure_tenant(tenant).await?;
        Ok(super::installations::remove_installation(&mut self.conn, tenant, workspace).await?)
    }

    /// Deletes every tenant's expired or consumed install states, `batch` rows per statement.
    pub async fn prune_install_states(&mut self, batch: NonZeroU32) -> Result<u64, StorageError> {
        let mut total = 0;
        loop {
            let deleted = diesel::sql_query(
                "DELETE FROM messaging_install_states WHERE state_hash IN (                    SELECT state_hash FROM messaging_install_states                     WHERE expires_at <= now() OR consumed_at IS NOT NULL LIMIT $1)",
            )
            .bind::<BigInt, _>(i64::from(batch.get()))
            .execute(&mut self.conn)
            .await
            .map_err(from_diesel)?;
            total += deleted as u64;
            if deleted < batch.get() as usize {
                return Ok(total);
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

/// An installation as operators list it: never a token.
#[derive(Debug, Clone, PartialEq, Eq, diesel::QueryableByName)]
pub struct InstallationSummary {
    #[diesel(sql_type = SqlUuid)]
    pub tenant_id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub team_id: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub enterprise_id: Option<String>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub is_enterprise_install: bool,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub app_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub bot_user_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub scopes: String,
    /// False once Slack revoked the bot token.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    pub has_bot_token: bool,
    #[diesel(sql_type = diesel::sql_types::Nullable<Timestamptz>)]
    pub token_expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Timestamptz)]
    pub installed_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

/// What `rotate_secrets` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Secrets sealed again with the current key.
    pub resealed: u64,
}

fn rotation_error(error: RotationError) -> OperatorError {
    match error {
        RotationError::Database(e) => OperatorError::Storage(from_diesel(e)),
        RotationError::Unopenable(tenant, problem) => OperatorError::Storage(StorageError::Unexpected(
            format!("a secret of tenant {tenant}: {problem}"),
        )),
    }
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

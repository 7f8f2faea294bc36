//! Maintenance across tenants, from the command line: re-sealing stored secrets under the
//! current key, and pruning expired receipts and install states in bounded batches.
//!
//! [`PgMaintenance`] owns an owner connection (no role switch): these act across tenants on
//! purpose, and row-level security does not apply to the tables' owner. Each run writes one
//! audit entry once it has finished (what it did), like every other change. Every method
//! answers the domain's [`StorageError`].

use std::fmt;
use std::num::NonZeroU32;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::{StorageError, TenantId};
use uuid::Uuid;

use super::directory::{AGENT_SECRET_COLUMN, BOT_TOKEN_COLUMN, PAYLOAD_COLUMN, REFRESH_TOKEN_COLUMN};
use super::errors::{from_connection, from_diesel};
use super::schema::{agent_bridges, deleted_tenants, messaging_event_payloads as payloads, tenants};
use crate::secrets::{Keyring, OpenError, SealedIn};

diesel::define_sql_function! {
    /// The key a stored value was sealed with (`''` for one stored before encryption): the
    /// sealed format's one statement in SQL, beside `secrets.rs` which writes it.
    fn doorman_sealed_key_id(value: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

/// Where one tenant's receipts are kept, and how many events it had lately: what spreading
/// tenants over a Citus cluster by their load starts from (docs/operations.md, "Placing
/// tenants").
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct TenantPlacement {
    #[diesel(sql_type = SqlUuid)]
    pub tenant: Uuid,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub name: String,
    /// The Citus node holding its shard (`host:port`); `None` on one PostgreSQL.
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    pub node: Option<String>,
    /// Its shard of the receipts (its payloads' and fingerprints' are co-located with it).
    #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
    pub shard: Option<i64>,
    /// Events claimed in the last hour, and in the last day.
    #[diesel(sql_type = BigInt)]
    pub last_hour: i64,
    #[diesel(sql_type = BigInt)]
    pub last_day: i64,
}

/// The events each tenant claimed in the last day, and in the last hour: one aggregate over
/// each shard's last day of receipts (by their `claimed_at`), read by an operator's command,
/// never on the hot path.
const RECENT_VOLUME: &str = "SELECT r.tenant_id, \
        count(*) FILTER (WHERE r.claimed_at > now() - interval '1 hour') AS last_hour, count(*) AS last_day \
   FROM public.messaging_event_receipts AS r \
  WHERE r.claimed_at > now() - interval '1 day' AND r.claimed_at IS NOT NULL GROUP BY r.tenant_id";

/// Maintenance on one owner connection.
pub struct PgMaintenance {
    conn: AsyncPgConnection,
}

impl fmt::Debug for PgMaintenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PgMaintenance")
    }
}

impl PgMaintenance {
    /// Connects as the URL's user, who must own the tables (the user `doorman migrate` ran as),
    /// TLS as the URL says. No statement bound (a re-seal or prune runs as long as it must, in
    /// batches), but a lock wait is bounded so that maintenance never queues serving behind it.
    pub async fn connect(database_url: &str) -> Result<Self, StorageError> {
        let target = super::connect::Target::parse(database_url)
            .map_err(|e| StorageError::Unavailable(format!("cannot connect to the database: {e}")))?;
        let limits =
            super::connect::SessionLimits { lock: std::time::Duration::from_secs(5), ..Default::default() };
        let conn = target.establish(&limits).await.map_err(from_connection)?;
        Ok(Self { conn })
    }

    /// Re-seals every stored secret that is not sealed with the current key (or not sealed
    /// at all: stored before encryption), `batch` rows per transaction, so it can be stopped
    /// and run again at any point. Stops at the first value no configured key opens, naming
    /// its tenant and key.
    pub async fn rotate_secrets(
        &mut self,
        keys: &Keyring,
        batch: NonZeroU32,
    ) -> Result<Rotation, StorageError> {
        // The key id, compared with each value's by `doorman_sealed_key_id` (the format's one
        // statement in SQL).
        let current = keys.current().to_owned();
        let mut rotation = Rotation::default();
        loop {
            let done = self
                .conn
                .transaction::<_, RotationError, _>(async |conn| {
                    let rows: Vec<(Uuid, String)> = agent_bridges::table
                        .filter(doorman_sealed_key_id(agent_bridges::signing_secret).ne(&current))
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
    ) -> Result<u64, StorageError> {
        self.conn
            .transaction::<_, RotationError, _>(async |conn| {
                let rows: Vec<(Uuid, String, String, String)> = payloads::table
                    .filter(doorman_sealed_key_id(payloads::payload).ne(current))
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
    ) -> Result<u64, StorageError> {
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
                      WHERE doorman_sealed_key_id(bot_token) <> $1 OR doorman_sealed_key_id(refresh_token) <> $1 \
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

    /// Deletes every tenant's expired or consumed install states, `batch` rows per statement.
    pub async fn prune_install_states(&mut self, batch: NonZeroU32) -> Result<u64, StorageError> {
        let mut total = 0;
        loop {
            let deleted = diesel::sql_query(
                "DELETE FROM messaging_install_states WHERE state_hash IN ( \
                   SELECT state_hash FROM messaging_install_states \
                    WHERE expires_at <= now() OR consumed_at IS NOT NULL LIMIT $1)",
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

    /// Deletes console sessions that ended or expired and sign-in links spent or expired
    /// (neither can sign anyone in again), `batch` rows per statement.
    pub async fn prune_console_sessions(&mut self, batch: NonZeroU32) -> Result<u64, StorageError> {
        let mut total = 0;
        for statement in [
            "DELETE FROM console_sessions WHERE id_hash IN ( \
               SELECT id_hash FROM console_sessions WHERE ended_at IS NOT NULL OR expires_at <= now() LIMIT $1)",
            "DELETE FROM console_sign_in_links WHERE token_hash IN ( \
               SELECT token_hash FROM console_sign_in_links WHERE used_at IS NOT NULL OR expires_at <= now() LIMIT $1)",
        ] {
            loop {
                let deleted = diesel::sql_query(statement)
                    .bind::<BigInt, _>(i64::from(batch.get()))
                    .execute(&mut self.conn)
                    .await
                    .map_err(from_diesel)?;
                total += deleted as u64;
                if deleted < batch.get() as usize {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Every tenant's placement and recent volume, the busiest first. On Citus the node comes
    /// from the coordinator's metadata and the volume from every worker's shards (one
    /// aggregate per shard); on one PostgreSQL there is no node.
    pub async fn placements(&mut self) -> Result<Vec<TenantPlacement>, StorageError> {
        let citus: bool = diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(
            "EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')",
        ))
        .get_result(&mut self.conn)
        .await
        .map_err(from_diesel)?;
        let node = if citus {
            "(SELECT n.nodename || ':' || n.nodeport FROM pg_dist_placement AS p \
               JOIN pg_dist_node AS n ON n.groupid = p.groupid AND n.noderole = 'primary' AND n.isactive \
              WHERE p.shardid = s.shard LIMIT 1) AS node, s.shard AS shard"
        } else {
            "NULL::text AS node, NULL::bigint AS shard"
        };
        let shard = if citus {
            "get_shard_id_for_distribution_column('public.messaging_event_receipts', t.id)"
        } else {
            "NULL::bigint"
        };
        let query = format!(
            "SELECT t.id AS tenant, t.name, {node}, \
                    coalesce(v.last_hour, 0) AS last_hour, coalesce(v.last_day, 0) AS last_day \
               FROM public.tenants AS t \
               CROSS JOIN LATERAL (SELECT {shard} AS shard) AS s \
               LEFT JOIN ({RECENT_VOLUME}) AS v ON v.tenant_id = t.id \
              ORDER BY last_hour DESC, last_day DESC, t.name, t.id"
        );
        diesel::sql_query(query).load(&mut self.conn).await.map_err(from_diesel)
    }

    /// Deletes every tenant's receipts claimed before `expired_before`, tenant by tenant and
    /// at most `batch` rows per statement (each its own short transaction), with the same
    /// bounded prune a completed dispatch runs; then whatever deleted tenants left (an
    /// offboarding stopped half way, or a claim written in the moment before its deletion
    /// reached the serving processes), whatever its age. Returns how many were deleted.
    pub async fn prune_expired(
        &mut self,
        expired_before: DateTime<Utc>,
        batch: NonZeroU32,
    ) -> Result<u64, StorageError> {
        let tenant_ids: Vec<Uuid> =
            tenants::table.select(tenants::id).load(&mut self.conn).await.map_err(from_diesel)?;
        let per_statement = batch.get();
        let batch = u64::from(per_statement);
        let mut total = 0;
        for tenant in tenant_ids {
            loop {
                let PruneCount { pruned } =
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
        let deleted: Vec<Uuid> = deleted_tenants::table
            .select(deleted_tenants::tenant_id)
            .load(&mut self.conn)
            .await
            .map_err(from_diesel)?;
        for tenant in deleted.into_iter().map(TenantId::from_uuid) {
            loop {
                let purged = self
                    .conn
                    .transaction::<_, DieselError, _>(async |conn| {
                        super::admin::purge_deleted_tenant(conn, tenant, per_statement).await
                    })
                    .await
                    .map_err(from_diesel)?;
                total += purged;
                if purged < batch {
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// What `rotate_secrets` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Secrets sealed again with the current key.
    pub resealed: u64,
}

fn rotation_error(error: RotationError) -> StorageError {
    match error {
        RotationError::Database(e) => from_diesel(e),
        RotationError::Unopenable(tenant, problem) => {
            StorageError::Unexpected(format!("a secret of tenant {tenant}: {problem}"))
        }
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
struct PruneCount {
    #[diesel(sql_type = BigInt)]
    pruned: i64,
}

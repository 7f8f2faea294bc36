//! The embedded migrations (`migrations/` at the repository root).

use diesel::migration::{Migration, MigrationSource};
use diesel::pg::Pg;
use diesel_async::AsyncPgConnection;
use diesel_async::RunQueryDsl;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use doorman_domain::StorageError;

use super::errors::from_diesel;
use super::pool::PgPool;

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// A synchronous connection, as the migration harness wants one.
pub type SyncPg = AsyncConnectionWrapper<AsyncPgConnection>;

/// Why migrating did not finish. The harness's own errors (boxed by diesel_migrations) are
/// converted here, once, into words; none of them carries the database URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    #[error("{0}")]
    Failed(String),
    #[error("the migration task stopped: {0}")]
    Stopped(String),
}

impl MigrationError {
    /// A harness error (a migration's SQL failed, the history table is unreadable, …).
    pub fn failed(error: impl std::fmt::Display) -> Self {
        Self::Failed(error.to_string())
    }
}

/// Applies every pending migration as the connecting (owner) user; returns the versions
/// applied. Runs the synchronous harness on a blocking thread.
pub async fn run_pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let applied = conn.run_pending_migrations(MIGRATIONS).map_err(MigrationError::failed)?;
        Ok(applied.iter().map(ToString::to_string).collect())
    })
    .await
}

/// What `/readyz` reports about the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Some migration this binary embeds is not applied.
    MigrationsPending,
    /// The server reached accepts no writes (a standby, or a primary on its way down): claims
    /// would fail. A URL with `target_session_attrs=read-write` never connects to one.
    ReadOnly,
}

/// Whether the database has every migration this binary embeds and accepts writes.
pub async fn readiness(pool: &PgPool) -> Result<Readiness, StorageError> {
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        read_only: bool,
    }
    let mut unit = pool.unit().await?;
    let applied = diesel::sql_query(
        "SELECT version, pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only \
           FROM __diesel_schema_migrations",
    )
    .load::<Applied>(&mut unit)
    .await
    .map_err(from_diesel);
    let applied = unit.finish(applied).await?;
    let embedded = MigrationSource::<Pg>::migrations(&MIGRATIONS)
        .map_err(|e| StorageError::Unexpected(format!("embedded migrations: {e}")))?;
    if applied.iter().any(|a| a.read_only) {
        return Ok(Readiness::ReadOnly);
    }
    let current =
        embedded.iter().all(|m| applied.iter().any(|a| a.version == m.name().version().to_string()));
    Ok(if current { Readiness::Ready } else { Readiness::MigrationsPending })
}

/// How many migrations this binary embeds.
pub fn embedded_count() -> usize {
    MigrationSource::<Pg>::migrations(&MIGRATIONS).map(|m| m.len()).unwrap_or(0)
}

/// Runs `work` with a synchronous connection (the migration harness is synchronous) on a
/// blocking thread, so the async runtime is never blocked.
pub async fn with_sync_connection<T: Send + 'static>(
    database_url: &str,
    work: impl FnOnce(&mut SyncPg) -> Result<T, MigrationError> + Send + 'static,
) -> Result<T, MigrationError> {
    let url = database_url.to_owned();
    tokio::task::spawn_blocking(move || {
        use diesel::Connection;
        let mut conn = SyncPg::establish(&url).map_err(|e| MigrationError::Connect(e.to_string()))?;
        work(&mut conn)
    })
    .await
    .map_err(|e| MigrationError::Stopped(e.to_string()))?
}

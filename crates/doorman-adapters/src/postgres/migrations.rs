//! The embedded migrations (`migrations/` at the repository root).

use diesel::migration::{Migration, MigrationSource};
use diesel::pg::Pg;
use diesel_async::AsyncPgConnection;
use diesel_async::RunQueryDsl;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use doorman_domain::StorageError;

use super::errors::{from_diesel, from_pool};
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

/// Whether the database has applied every migration this binary embeds, asked through the
/// server pool (for `/readyz`).
pub async fn is_current(pool: &PgPool) -> Result<bool, StorageError> {
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    let mut conn = pool.get().await.map_err(from_pool)?;
    let applied: Vec<Applied> = diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
        .load(&mut conn)
        .await
        .map_err(from_diesel)?;
    let embedded = MigrationSource::<Pg>::migrations(&MIGRATIONS)
        .map_err(|e| StorageError::Unexpected(format!("embedded migrations: {e}")))?;
    Ok(embedded.iter().all(|m| applied.iter().any(|a| a.version == m.name().version().to_string())))
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

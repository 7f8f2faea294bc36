//! The embedded migrations (`migrations/` at the repository root).

use diesel::migration::{Migration, MigrationSource};
use diesel::pg::Pg;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

type SyncPg = AsyncConnectionWrapper<AsyncPgConnection>;

/// Errors from the migration harness, boxed as diesel_migrations returns them.
pub type MigrationError = Box<dyn std::error::Error + Send + Sync>;

/// Applies every pending migration as the connecting (owner) user; returns the versions
/// applied. Runs the synchronous harness on a blocking thread.
pub async fn run_pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let applied = conn.run_pending_migrations(MIGRATIONS)?;
        Ok(applied.iter().map(ToString::to_string).collect())
    })
    .await
}

/// Reverts every applied migration, newest first (used by tests of the down scripts).
pub async fn revert_all(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let reverted = conn.revert_all_migrations(MIGRATIONS)?;
        Ok(reverted.iter().map(ToString::to_string).collect())
    })
    .await
}

/// Versions embedded in this binary that the database has not applied.
pub async fn pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let pending = conn.pending_migrations(MIGRATIONS)?;
        Ok(pending.iter().map(|m| m.name().to_string()).collect())
    })
    .await
}

/// How many migrations this binary embeds.
pub fn embedded_count() -> usize {
    MigrationSource::<Pg>::migrations(&MIGRATIONS).map(|m| m.len()).unwrap_or(0)
}

async fn with_sync_connection<T: Send + 'static>(
    database_url: &str,
    work: impl FnOnce(&mut SyncPg) -> Result<T, MigrationError> + Send + 'static,
) -> Result<T, MigrationError> {
    let url = database_url.to_owned();
    tokio::task::spawn_blocking(move || {
        use diesel::Connection;
        let mut conn = SyncPg::establish(&url)?;
        work(&mut conn)
    })
    .await?
}

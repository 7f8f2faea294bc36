//! Migrations backwards: tests of the down scripts. The server only ever applies them
//! (`doorman_adapters::postgres::migrations`).

use diesel::migration::Migration;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::MigrationHarness;
use doorman_adapters::postgres::migrations::{MIGRATIONS, MigrationError};

type SyncPg = AsyncConnectionWrapper<AsyncPgConnection>;

/// Reverts every applied migration, newest first; returns the versions reverted.
pub async fn revert_all(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let reverted = conn.revert_all_migrations(MIGRATIONS)?;
        Ok(reverted.iter().map(ToString::to_string).collect())
    })
    .await
}

/// Versions embedded in the binary that the database has not applied.
pub async fn pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let pending = conn.pending_migrations(MIGRATIONS)?;
        Ok(pending.iter().map(|m| m.name().to_string()).collect())
    })
    .await
}

/// The migration harness is synchronous: run it on a blocking thread.
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

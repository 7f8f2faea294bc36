//! Migrations backwards: tests of the down scripts. The server only ever applies them
//! (`doorman_adapters::postgres::migrations`).

use diesel::migration::Migration;
use diesel_migrations::MigrationHarness;
use doorman_adapters::postgres::migrations::{MIGRATIONS, MigrationError, with_sync_connection};

/// Reverts every applied migration, newest first; returns the versions reverted.
pub async fn revert_all(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let reverted = conn.revert_all_migrations(MIGRATIONS).map_err(MigrationError::failed)?;
        Ok(reverted.iter().map(ToString::to_string).collect())
    })
    .await
}

/// Applies the next pending migration; its version, or `None` when none is pending.
pub async fn run_next(database_url: &str) -> Result<Option<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let pending = conn.pending_migrations(MIGRATIONS).map_err(MigrationError::failed)?;
        let Some(next) = pending.first() else { return Ok(None) };
        let applied = conn.run_migration(next.as_ref()).map_err(MigrationError::failed)?;
        Ok(Some(applied.to_string()))
    })
    .await
}

/// Reverts the newest applied migration; its version.
pub async fn revert_last(database_url: &str) -> Result<String, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let reverted = conn.revert_last_migration(MIGRATIONS).map_err(MigrationError::failed)?;
        Ok(reverted.to_string())
    })
    .await
}

/// Versions embedded in the binary that the database has not applied.
pub async fn pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        let pending = conn.pending_migrations(MIGRATIONS).map_err(MigrationError::failed)?;
        Ok(pending.iter().map(|m| m.name().to_string()).collect())
    })
    .await
}

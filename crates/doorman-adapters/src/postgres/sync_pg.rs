//! A synchronous connection for the work `doorman migrate` does (the migration harness is
//! synchronous), and the error it ends with: shared by the migrations ([`super::migrations`]),
//! the SQL definitions applied after them ([`super::definitions`]) and the Citus step
//! ([`super::citus`]), so none of those needs another for them.

use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;

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

/// Runs `work` with a synchronous connection (the migration harness is synchronous) on a
/// blocking thread, so the async runtime is never blocked.
pub async fn with_sync_connection<T: Send + 'static>(
    database_url: &str,
    work: impl FnOnce(&mut SyncPg) -> Result<T, MigrationError> + Send + 'static,
) -> Result<T, MigrationError> {
    // Connected as the URL says, TLS included (`super::connect`), then driven synchronously.
    let target =
        super::connect::Target::parse(database_url).map_err(|e| MigrationError::Connect(e.to_string()))?;
    let conn = target
        .establish(&super::connect::SessionLimits::default())
        .await
        .map_err(|e| MigrationError::Connect(e.to_string()))?;
    tokio::task::spawn_blocking(move || {
        let mut conn = SyncPg::from(conn);
        work(&mut conn)
    })
    .await
    .map_err(|e| MigrationError::Stopped(e.to_string()))?
}

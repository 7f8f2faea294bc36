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

/// A script's statements: split where a line ends with `;` (for scripts that hold no function
/// bodies: a migration run outside a transaction, a policy file), comment-only pieces dropped.
pub fn statements(sql: &str) -> impl Iterator<Item = &str> {
    sql.split_inclusive(";\n").map(str::trim).filter(|piece| {
        piece.lines().any(|line| !line.trim().is_empty() && !line.trim_start().starts_with("--"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_splits_into_its_statements_without_its_comments() {
        let script = "-- about it\nDROP INDEX CONCURRENTLY IF EXISTS a;\nCREATE INDEX CONCURRENTLY a ON t (x)\n    WHERE y IS NOT NULL;\n-- the end\n";
        let found: Vec<&str> = statements(script).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].ends_with("IF EXISTS a;"));
        assert!(found[1].starts_with("CREATE INDEX") && found[1].ends_with("NOT NULL;"));
    }
}

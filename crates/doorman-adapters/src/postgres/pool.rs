//! The server's connection pool.

use std::time::Duration;

use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::StorageError;
use futures_util::FutureExt;

use super::errors::from_connection;

/// The role every server connection acts as. Created by the first migration.
pub const APP_ROLE: &str = "doorman_app";

pub type PgPool = bb8::Pool<AsyncDieselConnectionManager<AsyncPgConnection>>;

/// Pool sizing and timeouts.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Most connections open at once. Each delivery holds one for its resolve and its claim,
    /// briefly; a background completion holds one for its transaction.
    pub max_size: u32,
    /// How long a request waits for a free connection before it is answered 503. Well under
    /// Slack's 3 s, so an overloaded pool still answers in time.
    pub connection_timeout: Duration,
    /// Connections idle longer than this are closed.
    pub idle_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 16,
            connection_timeout: Duration::from_millis(1500),
            idle_timeout: Duration::from_secs(300),
        }
    }
}

/// Opens the server pool. Every connection runs `SET ROLE doorman_app` as it opens, so
/// row-level security applies to all it does; a pooled connection is never `RESET ROLE`.
///
/// Connections are opened lazily: a database that is down at start-up makes requests
/// answer 503 (and `/readyz` fail) rather than the process refuse to start.
pub fn connect(database_url: &str, settings: &PoolSettings) -> PgPool {
    let mut config = ManagerConfig::default();
    // "Fast" only checks for a dangling transaction on check-out; "Verified" would add a
    // round trip to every request. A connection that died is found on first use, becomes
    // `StorageError::Unavailable` and is dropped by the pool.
    config.recycling_method = RecyclingMethod::Fast;
    config.custom_setup = Box::new(|url| {
        let url = url.to_owned();
        async move {
            let mut conn = AsyncPgConnection::establish(&url).await?;
            diesel::sql_query(format!("SET ROLE {APP_ROLE}"))
                .execute(&mut conn)
                .await
                .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            Ok(conn)
        }
        .boxed()
    });
    let manager = AsyncDieselConnectionManager::new_with_config(database_url, config);
    bb8::Pool::builder()
        .max_size(settings.max_size)
        .min_idle(None)
        .connection_timeout(settings.connection_timeout)
        .idle_timeout(Some(settings.idle_timeout))
        .build_unchecked(manager)
}

/// One owner connection (no role switch), for migrations and operator commands.
pub async fn connect_owner(database_url: &str) -> Result<AsyncPgConnection, StorageError> {
    AsyncPgConnection::establish(database_url).await.map_err(from_connection)
}

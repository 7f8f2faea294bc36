//! The server's connection pool.

use std::time::Duration;

use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolableConnection, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures_util::FutureExt;

/// The role every server connection acts as. Created by the first migration.
pub const APP_ROLE: &str = "doorman_app";

/// The role the admin API's connections act as (the `admin_role_keys_and_audit` migration):
/// it writes the directory, never claims.
pub const ADMIN_ROLE: &str = "doorman_admin";

pub type PgPool = bb8::Pool<AsyncDieselConnectionManager<AsyncPgConnection>>;

/// Pool sizing and timeouts.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Most connections open at once. A delivery holds one for its resolve and one for its
    /// claim, one statement each. On a 2-core machine 8 beat 4 and 16 (docs/benchmarks.md):
    /// more backends than cores mostly add contention.
    pub max_size: u32,
    /// How long a request waits for a free connection before it is answered 503. A delivery
    /// may wait twice (resolve, claim), so twice this must stay well under Slack's 3 s.
    pub connection_timeout: Duration,
    /// Connections idle longer than this are closed.
    pub idle_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 8,
            connection_timeout: Duration::from_secs(1),
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
    connect_as(database_url, settings, Some(APP_ROLE))
}

/// A pool whose connections `SET ROLE role` as they open (`None`: act as the login user, as
/// operator commands do with the tables' owner).
pub fn connect_as(database_url: &str, settings: &PoolSettings, role: Option<&'static str>) -> PgPool {
    let mut config = ManagerConfig::default();
    // On check-out, refuse a connection whose socket has closed (a database restart or a
    // network cut) or whose transaction state is broken, without a round trip: "Verified"
    // would add a `SELECT 1` to every request, and "Fast" would hand out dead connections,
    // each failing one request after an outage.
    config.recycling_method = RecyclingMethod::CustomFunction(Box::new(|conn: &mut AsyncPgConnection| {
        let broken = conn.is_broken();
        async move {
            if broken {
                return Err(diesel::result::Error::DatabaseError(
                    diesel::result::DatabaseErrorKind::ClosedConnection,
                    Box::new(String::from("pooled connection is closed")),
                ));
            }
            Ok(())
        }
        .boxed()
    }));
    config.custom_setup = Box::new(move |url| {
        let url = url.to_owned();
        async move {
            let mut conn = AsyncPgConnection::establish(&url).await?;
            if let Some(role) = role {
                diesel::sql_query(format!("SET ROLE {role}"))
                    .execute(&mut conn)
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            }
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

/// `set_config('app.all_tenants', 'on', true)`: the rest of this transaction may read every
/// tenant's row of `tenants` and `admin_audit` as `doorman_admin` (listings across tenants);
/// nothing else, and nothing after the transaction.
pub async fn across_tenants(conn: &mut AsyncPgConnection) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT set_config('app.all_tenants', 'on', true)").execute(conn).await.map(drop)
}

/// `set_config('app.tenant_id', …, true)`: the rest of this transaction acts for `tenant`
/// under row-level security (the setting ends with the transaction).
pub async fn act_for(
    conn: &mut AsyncPgConnection,
    tenant: doorman_domain::TenantId,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT set_config('app.tenant_id', $1, true)")
        .bind::<diesel::sql_types::Text, _>(tenant.to_string())
        .execute(conn)
        .await
        .map(drop)
}

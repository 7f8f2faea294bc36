//! Connection pools, and the unit of work every query runs in.
//!
//! Directly, or through a pooler in session mode, a pooled connection is Doorman's own while
//! it holds it: it takes its role once (`SET ROLE`) and keeps its prepared statements. Through
//! a pooler in transaction mode (PgBouncer's `pool_mode = transaction`) it is not: each
//! transaction may run on another server connection. So in [`PoolMode::Transaction`] each
//! [`Unit`] of work is a transaction of its own that names its role first (`BEGIN; SELECT
//! set_config('role', …, true), …` in one round trip), and nothing is prepared for later.
//! Nothing else Doorman does relies on the session: tenants are named per transaction
//! ([`act_for`]), and the one thing that needs a session, the directory's `LISTEN`, has a
//! connection of its own ([`super::listener`]).
//!
//! Every connection is made as the URL's `sslmode` says ([`super::connect`]) and keeps its
//! pool's [`SessionLimits`] (statement, lock and idle-in-transaction timeouts), set once for the
//! session, or, through a transaction pooler, in each transaction. When no connection can be
//! made, the error a caller gets says why the last attempt failed (refused, TLS,
//! authentication), not only that it waited.

use std::time::Duration;

use diesel::connection::CacheSize;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolableConnection, RecyclingMethod,
};
use diesel_async::{
    AnsiTransactionManager, AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection,
    TransactionManager,
};
use doorman_domain::StorageError;
use futures_util::FutureExt;
use uuid::Uuid;

use super::connect::{SessionLimits, Target};
use super::errors::{from_diesel, from_pool};

/// The role every server connection acts as. Created by the first migration.
pub const APP_ROLE: &str = "doorman_app";

/// The role the admin API's connections act as (the `admin_role_keys_and_audit` migration):
/// it writes the directory, never claims.
pub const ADMIN_ROLE: &str = "doorman_admin";

type Manager = AsyncDieselConnectionManager<AsyncPgConnection>;

/// How Doorman reaches PostgreSQL (`DOORMAN_DB_POOL_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolMode {
    /// Directly, or through a pooler in session mode.
    #[default]
    Session,
    /// Through a pooler in transaction mode: every unit of work is a transaction that names
    /// its role, and no statement is prepared for a later transaction.
    Transaction,
}

/// Where a tenant's claims and outcomes are written on Citus (`DOORMAN_CITUS_WRITES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CitusWrites {
    /// On the node that holds the tenant's shards, connecting to it at the address the
    /// cluster's metadata gives it: the coordinator is off the hot path (ADR 24).
    #[default]
    OnTheirNode,
    /// Through the coordinator, by the batch functions' Citus forms: for a cluster whose
    /// workers Doorman's hosts may not reach.
    ThroughTheCoordinator,
}

/// Pool sizing, timeouts and mode.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Most connections open at once. A delivery holds one for its resolve and one for its
    /// claim, one statement each. On a 2-core machine 8 beat 4 and 16 (docs/benchmarks.md):
    /// more backends than cores mostly add contention.
    pub max_size: u32,
    /// How long a request waits for a free connection before it is answered 503.
    pub connection_timeout: Duration,
    /// Connections idle longer than this are closed.
    pub idle_timeout: Duration,
    pub mode: PoolMode,
    /// What each connection's statements may take.
    pub limits: SessionLimits,
    /// On Citus, whether a tenant's claims and outcomes are written on the node that holds its
    /// shards, connecting to it directly (ADR 24), or through the coordinator.
    pub citus_writes: CitusWrites,
    /// Each session sets `lc_messages = 'C'` first (before its role, as the login): the
    /// server's messages for the login are not in English and it may set them
    /// ([`super::login::Login::Ready`]), and errors are told apart partly by their words.
    pub c_messages: bool,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_size: 8,
            connection_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(300),
            mode: PoolMode::Session,
            citus_writes: CitusWrites::default(),
            limits: SessionLimits::default(),
            c_messages: false,
        }
    }
}

/// A pool of connections that act as one role (or as the login user).
#[derive(Clone)]
pub struct PgPool {
    connections: bb8::Pool<Manager>,
    role: Option<&'static str>,
    mode: PoolMode,
    limits: SessionLimits,
    c_messages: bool,
    /// Why the last connection attempt failed, for the error a caller gets after waiting.
    last_failure: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    /// What it was opened with, for a pool of the same login to another node ([`PgPool::on_node`]).
    url: std::sync::Arc<str>,
    settings: PoolSettings,
    purpose: Purpose,
}

impl std::fmt::Debug for PgPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgPool").field("role", &self.role).field("mode", &self.mode).finish_non_exhaustive()
    }
}

/// Opens the server pool: every connection acts as `doorman_app`, so row-level security
/// applies to all it does.
///
/// Connections are opened lazily: a database that is down at start-up makes requests
/// answer 503 (and `/readyz` fail) rather than the process refuse to start. A URL may name
/// several hosts the way libpq does (`postgres://h1:5432,h2:5433/db?target_session_attrs=
/// read-write`): each new connection goes to the one that accepts writes.
pub fn connect(database_url: &str, settings: &PoolSettings) -> PgPool {
    connect_as(database_url, settings, Some(APP_ROLE))
}

/// A pool whose connections act as `role` (`None`: as the login user, as operator commands
/// do with the tables' owner).
pub fn connect_as(database_url: &str, settings: &PoolSettings, role: Option<&'static str>) -> PgPool {
    open(database_url, settings, role, Purpose::Any)
}

/// What a pool's connections are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// Anything. A connection that cannot be made is tried again until the pool's connection
    /// timeout: the server may be restarting, or a standby being promoted, and the caller has
    /// nowhere else to go.
    Any,
    /// A Citus node's batch writes ([`PgPool::on_node`]), and nothing else. A node that refuses
    /// connections is down: its tenants' deliveries are answered 503 at once (Slack re-sends
    /// them), as the coordinator would have answered them, rather than after a wait that
    /// outlasts short outages. And each session keeps the planner to the keys' indexes, as the
    /// batch functions do for their statements (`SET enable_… = off` on each): a batch's rows
    /// joined with the arrays it was given are otherwise sometimes planned as a scan of the
    /// tenant's shard.
    NodeWrites,
}

/// What a [`Purpose::NodeWrites`] session sets once: the planner held to the keys' indexes,
/// and `citus.propagate_set_commands` as `citus.sql` sets it for the coordinator's sessions, so
/// that a batch a node forwards to another (a tenant whose shard just moved) takes its `SET
/// LOCAL` of the tenants along.
const NODE_WRITES_SETUP: &str = "SET enable_seqscan = off; SET enable_bitmapscan = off; \
     SET enable_hashjoin = off; SET enable_mergejoin = off; SET citus.propagate_set_commands = 'local'; ";

fn open(database_url: &str, settings: &PoolSettings, role: Option<&'static str>, purpose: Purpose) -> PgPool {
    let (mode, c_messages) = (settings.mode, settings.c_messages);
    let mut config = ManagerConfig::default();
    // On check-out, refuse a connection whose socket has closed (a database restart or a
    // network cut, a primary lost) or whose transaction state is broken, without a round
    // trip: "Verified" would add a `SELECT 1` to every request, and "Fast" would hand out
    // dead connections, each failing one request after an outage.
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
    let target = Target::parse(database_url).map_err(|e| e.to_string());
    let session_limits = if mode == PoolMode::Session { settings.limits } else { SessionLimits::default() };
    let last_failure: std::sync::Arc<std::sync::Mutex<Option<String>>> = std::sync::Arc::default();
    let forget_failure = std::sync::Arc::clone(&last_failure);
    config.custom_setup = Box::new(move |_url| {
        let (target, forget_failure) = (target.clone(), std::sync::Arc::clone(&forget_failure));
        async move {
            let target = target.map_err(diesel::ConnectionError::InvalidConnectionUrl)?;
            let mut conn = target.establish(&session_limits).await?;
            // A connection was made: an earlier failure no longer explains a wait.
            *forget_failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
            let mut setup = String::new();
            match (mode, role) {
                // The messages' language, then the role, which lasts the session: a pooled
                // connection is never `RESET ROLE`.
                (PoolMode::Session, role) => {
                    if purpose == Purpose::NodeWrites {
                        setup.push_str(NODE_WRITES_SETUP);
                    }
                    if c_messages {
                        setup.push_str("SET lc_messages = 'C'; ");
                    }
                    if let Some(role) = role {
                        setup.push_str(&format!("SELECT {}", act_as(role, false)));
                    }
                }
                // Each transaction names its role (`Unit`); a prepared statement would be
                // prepared on one server connection and used on another.
                (PoolMode::Transaction, _) => conn.set_prepared_statement_cache_size(CacheSize::Disabled),
            }
            if !setup.is_empty() {
                conn.batch_execute(&setup)
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            }
            Ok(conn)
        }
        .boxed()
    });
    let manager = AsyncDieselConnectionManager::new_with_config(database_url, config);
    let connections = bb8::Pool::builder()
        .max_size(settings.max_size)
        .min_idle(None)
        .connection_timeout(settings.connection_timeout)
        .retry_connection(purpose == Purpose::Any)
        .idle_timeout(Some(settings.idle_timeout))
        .error_sink(Box::new(LastFailure(std::sync::Arc::clone(&last_failure))))
        .build_unchecked(manager);
    PgPool {
        connections,
        role,
        mode,
        limits: settings.limits,
        c_messages,
        last_failure,
        url: database_url.into(),
        settings: settings.clone(),
        purpose,
    }
}

/// The SQL expression (a scalar subquery) that makes a session (or, `local`, a transaction) act as `role`: `SET
/// ROLE`, unless the login already acts as it under the policies by itself: it inherits the
/// role's privileges and is neither a superuser, nor exempt from row-level security, nor (a
/// member of) the tables' owner. Such a login (`CREATE ROLE … LOGIN INHERIT`, a member of the
/// role) keeps its own name, which Citus needs: it connects to the workers as the role a
/// statement runs as, and a role taken with `SET ROLE` would have to be allowed to log in
/// there (docs/operations.md, "Running on Citus"). Any other login takes the role, so that
/// the policies apply to it as they do to the role.
fn act_as(role: &str, local: bool) -> String {
    format!(
        "(SELECT CASE WHEN pg_has_role(session_user, '{role}', 'USAGE') \
                AND NOT r.rolsuper AND NOT r.rolbypassrls \
                AND NOT EXISTS (SELECT FROM pg_class AS c WHERE c.oid = to_regclass('public.tenants') \
                                   AND pg_has_role(session_user, c.relowner, 'USAGE')) \
              THEN current_user::text ELSE set_config('role', '{role}', {local}) END \
           FROM pg_roles AS r WHERE r.rolname = session_user)"
    )
}

/// Keeps what the last failed connection attempt said (bb8 reports those only here).
#[derive(Debug, Clone)]
struct LastFailure(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl bb8::ErrorSink<diesel_async::pooled_connection::PoolError> for LastFailure {
    fn sink(&self, error: diesel_async::pooled_connection::PoolError) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error.to_string());
    }

    fn boxed_clone(&self) -> Box<dyn bb8::ErrorSink<diesel_async::pooled_connection::PoolError>> {
        Box::new(self.clone())
    }
}

impl PgPool {
    /// A connection for one unit of work; end it with [`Unit::finish`]. Through a
    /// transaction pooler the unit is a transaction, begun here.
    pub async fn unit(&self) -> Result<Unit<'_>, StorageError> {
        let got = match self.purpose {
            Purpose::Any => self.connections.get().await,
            Purpose::NodeWrites => self.get_unless_down().await?,
        };
        let mut conn =
            got.map_err(|error| from_pool(error, self.last_failure(), self.connections.state().connections))?;
        let in_transaction = self.mode == PoolMode::Transaction;
        if in_transaction {
            // The messages' language first: as the login, before the role.
            let messages = self.c_messages.then(|| "set_config('lc_messages', 'C', true)".to_owned());
            let role = self.role.map(|role| act_as(role, true));
            let settings: Vec<String> =
                messages.into_iter().chain(role).chain(self.limits.local_settings()).collect();
            let begin = format!("BEGIN; SELECT {}", settings.join(", "));
            AnsiTransactionManager::begin_transaction_sql(&mut *conn, &begin).await.map_err(from_diesel)?;
        }
        Ok(Unit { conn, in_transaction })
    }

    /// A pool like this one (the same login, role, sizes and limits) to the server at
    /// `host:port` instead, for a Citus node's batch writes only ([`Purpose::NodeWrites`]):
    /// a worker, as the cluster's metadata names it. `None` through a transaction pooler,
    /// which stands for the coordinator alone, or when the settings say to write through the
    /// coordinator.
    /// `None` for the address: this pool's own server (the coordinator, when it holds shards:
    /// the metadata's name for it may be `localhost`).
    pub(crate) fn on_node(&self, address: Option<(&str, u16)>) -> Option<PgPool> {
        let direct = self.mode == PoolMode::Session && self.settings.citus_writes == CitusWrites::OnTheirNode;
        direct.then(|| {
            let url = match address {
                Some((host, port)) => super::connect::on_host(&self.url, host, port),
                None => self.url.to_string(),
            };
            open(&url, &self.settings, self.role, Purpose::NodeWrites)
        })
    }

    /// A connection, waiting for one to come free as [`Purpose::Any`] does, but answering at
    /// once when the server refuses new connections: the pool makes them in the background and
    /// would otherwise let the caller wait its whole connection timeout on a node that is down.
    async fn get_unless_down(
        &self,
    ) -> Result<
        Result<bb8::PooledConnection<'_, Manager>, bb8::RunError<diesel_async::pooled_connection::PoolError>>,
        StorageError,
    > {
        /// How often a caller waiting for a connection looks whether the last attempt failed.
        const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(25);
        let give_up_at = tokio::time::Instant::now() + self.settings.connection_timeout;
        loop {
            let until = (tokio::time::Instant::now() + LOOK_EVERY).min(give_up_at);
            match tokio::time::timeout_at(until, self.connections.get()).await {
                Ok(got) => return Ok(got),
                Err(_) if tokio::time::Instant::now() >= give_up_at => {
                    return Ok(Err(bb8::RunError::TimedOut));
                }
                // Down: no connection open at all and the last attempt failed. A busy pool (its
                // connections all in use, an attempt refused for too many clients) waits on.
                Err(_) if self.is_down() => {
                    let failure = self.last_failure().unwrap_or_default();
                    return Err(StorageError::Unavailable(format!("no database connection: {failure}")));
                }
                Err(_) => {}
            }
        }
    }

    /// No connection is open and the last attempt to make one failed.
    pub(crate) fn is_down(&self) -> bool {
        self.connections.state().connections == 0 && self.last_failure().is_some()
    }

    fn last_failure(&self) -> Option<String> {
        self.last_failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Whether a connection this pool could not make means its server is down, so that a
    /// caller gains nothing by trying again within its time (a Citus node's pool), rather than
    /// being restarted or promoted.
    pub(crate) fn refused_means_down(&self) -> bool {
        self.purpose == Purpose::NodeWrites
    }

    /// Connections open now, idle or in use (for tests of how a pool recovers).
    pub fn open_connections(&self) -> u32 {
        self.connections.state().connections
    }
}

/// One unit of work on a pooled connection. Ended with [`Unit::finish`]; dropped unfinished
/// inside a transaction, its connection is discarded (and the transaction with it).
pub struct Unit<'p> {
    conn: bb8::PooledConnection<'p, Manager>,
    in_transaction: bool,
}

impl Unit<'_> {
    /// Ends the unit with the outcome of its work: commits it, or rolls it back on an error,
    /// when it is a transaction. A commit that fails is the unit's error.
    pub async fn finish<T, E: From<StorageError>>(mut self, outcome: Result<T, E>) -> Result<T, E> {
        if !self.in_transaction {
            return outcome;
        }
        match outcome {
            Ok(value) => {
                AnsiTransactionManager::commit_transaction(&mut *self.conn).await.map_err(from_diesel)?;
                Ok(value)
            }
            Err(error) => {
                self.rollback().await;
                Err(error)
            }
        }
    }

    /// Ends the unit, writing nothing it did. A rollback that fails leaves the connection
    /// broken, and the pool discards it.
    pub async fn rollback(mut self) {
        if self.in_transaction {
            let _ = AnsiTransactionManager::rollback_transaction(&mut *self.conn).await;
        }
    }
}

impl std::fmt::Debug for Unit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unit").field("in_transaction", &self.in_transaction).finish_non_exhaustive()
    }
}

impl std::ops::Deref for Unit<'_> {
    type Target = AsyncPgConnection;

    fn deref(&self) -> &AsyncPgConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for Unit<'_> {
    fn deref_mut(&mut self) -> &mut AsyncPgConnection {
        &mut self.conn
    }
}

/// `SET LOCAL app.all_tenants = on`: the rest of this transaction may read every tenant's row
/// of `tenants`, `messaging_workspaces` (the tenant search), `admin_audit` and
/// `admin_replay_jobs` as `doorman_admin` (listings across tenants); nothing else,
/// and nothing after the transaction.
pub async fn across_tenants(conn: &mut AsyncPgConnection) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT doorman_set_local('app.all_tenants', 'on')").execute(conn).await.map(drop)
}

/// A statement that reads across tenants, as [`rows_across_tenants`] runs it.
pub type AcrossTenants =
    diesel::query_builder::BoxedSqlQuery<'static, diesel::pg::Pg, diesel::query_builder::SqlQuery>;

/// The rows of one statement read across tenants (the overview's: the rollup's failures by
/// tenant, the agents in trouble), in a transaction on a unit of `pool` that says so
/// ([`across_tenants`]).
pub async fn rows_across_tenants<R>(pool: &PgPool, query: AcrossTenants) -> Result<Vec<R>, StorageError>
where
    R: diesel::QueryableByName<diesel::pg::Pg> + Send + 'static,
{
    let mut unit = pool.unit().await?;
    let rows = unit
        .transaction::<Vec<R>, diesel::result::Error, _>(async |conn| {
            across_tenants(conn).await?;
            query.load(conn).await
        })
        .await
        .map_err(from_diesel);
    unit.finish(rows).await
}

/// `SET LOCAL app.tenant_ids = {…}`: the rest of this transaction may read the receipts (and
/// the tables co-located with them) of these tenants under row-level security, as the hot
/// path's batches do: what a read across tenants found in `tenants` first (support's search,
/// the overview's stranded count). Through `doorman_set_local`, so on Citus the workers' shards
/// see it too (ADR 22).
pub async fn act_for_tenants(
    conn: &mut AsyncPgConnection,
    tenants: &[Uuid],
) -> Result<(), diesel::result::Error> {
    let list = format!("{{{}}}", tenants.iter().map(Uuid::to_string).collect::<Vec<_>>().join(","));
    diesel::sql_query("SELECT doorman_set_local('app.tenant_ids', $1)")
        .bind::<diesel::sql_types::Text, _>(list)
        .execute(conn)
        .await
        .map(drop)
}

/// `SET LOCAL app.tenant_id = …`: the rest of this transaction acts for `tenant` under
/// row-level security (the setting ends with the transaction). A `SET LOCAL` (through
/// `doorman_set_local`), not `set_config`: on Citus it reaches the workers' shards too (ADR 22).
pub async fn act_for(
    conn: &mut AsyncPgConnection,
    tenant: doorman_domain::TenantId,
) -> Result<(), diesel::result::Error> {
    diesel::sql_query("SELECT doorman_set_local('app.tenant_id', $1)")
        .bind::<diesel::sql_types::Text, _>(tenant.to_string())
        .execute(conn)
        .await
        .map(drop)
}

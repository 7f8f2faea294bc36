//! One fresh database per test, cloned from a template migrated once.
//!
//! `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) names the
//! server and a maintenance database to connect to. The template's name carries a hash of
//! the migration files and the SQL definitions, so it is built once per change of them, whichever test
//! process gets there first (an advisory lock serialises the build across processes), and a
//! stale template is never reused. Each [`TestDatabase`] is dropped with the test.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;

use diesel::sql_types::{BigInt, Bool, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use doorman_adapters::postgres::pool::{self, PgPool, PoolSettings};
use doorman_adapters::postgres::{PgMaintenance, PgReceiptStore, migrations};
use doorman_domain::TenantId;

pub use crate::operator::TestOperator;

const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database of its own for one test, dropped (with `FORCE`) when this value is.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
    server: String,
}

impl TestDatabase {
    /// Creates a fresh, fully migrated database.
    pub async fn create() -> Self {
        let server = server_url();
        let template = ensure_template(&server).await;
        let name = format!("doorman_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(&server).await.expect("connect to TEST_DATABASE_URL");
        diesel::sql_query(format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\""))
            .execute(&mut admin)
            .await
            .expect("create a test database from the template");
        let url = with_database(&server, &name);
        Self { name, url, server }
    }

    /// A fresh database with no migration applied, for tests that apply them one by one.
    pub async fn create_empty() -> Self {
        let server = server_url();
        ensure_template(&server).await; // the login roles
        let name = format!("doorman_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(&server).await.expect("connect to TEST_DATABASE_URL");
        diesel::sql_query(format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await
            .expect("create an empty test database");
        let url = with_database(&server, &name);
        Self { name, url, server }
    }

    /// The server's address (host and port), for a proxy to forward to.
    pub fn server_addr(&self) -> std::net::SocketAddr {
        let authority =
            self.url.split("://").nth(1).and_then(|rest| rest.split(['/', '?']).next()).unwrap_or("");
        let host_port = authority.rsplit('@').next().unwrap_or(authority);
        let host_port =
            if host_port.contains(':') { host_port.to_owned() } else { format!("{host_port}:5432") };
        std::net::ToSocketAddrs::to_socket_addrs(&host_port)
            .ok()
            .and_then(|mut addrs| addrs.next())
            .expect("TEST_DATABASE_URL names a reachable host")
    }

    /// The database's URL (login as the owner).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's URL logging in as [`SERVER_ROLE`]: a role whose only membership is
    /// `doorman_app`, as `doorman serve` runs in production (docs/operations.md).
    pub fn server_url(&self) -> String {
        with_user(&self.url, SERVER_ROLE)
    }

    /// The server pool, logged in as [`SERVER_ROLE`]: connections act as `doorman_app`, under
    /// row-level security.
    pub fn pool(&self) -> PgPool {
        self.pool_with(&PoolSettings::default())
    }

    pub fn pool_with(&self, settings: &PoolSettings) -> PgPool {
        pool::connect(&self.server_url(), settings)
    }

    /// The admin API's pool: logged in as [`ADMIN_ROLE`], connections acting as
    /// `doorman_admin`, as `doorman admin serve` has it.
    pub fn admin_pool(&self) -> PgPool {
        pool::connect_as(&self.admin_url(), &PoolSettings::default(), Some(pool::ADMIN_ROLE))
    }

    /// The database's URL logging in as [`ADMIN_ROLE`]: a role whose only membership is
    /// `doorman_admin`, as `doorman admin serve` runs in production.
    pub fn admin_url(&self) -> String {
        with_user(&self.url, ADMIN_ROLE)
    }

    /// The operator use cases as the command line runs them: on an owner pool, as `cli`.
    pub fn operator(&self) -> TestOperator {
        TestOperator::owner(&self.url)
    }

    /// Maintenance (re-sealing, pruning), on an owner connection.
    pub async fn maintenance(&self) -> PgMaintenance {
        PgMaintenance::connect(&self.url).await.expect("connect to the test database")
    }

    /// An owner connection, for SQL a test runs itself.
    pub async fn owner(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(&self.url).await.expect("connect to the test database")
    }

    /// The database's URL logging in as `login` (one of the test logins).
    pub fn url_as(&self, login: &str) -> String {
        with_user(&self.url, login)
    }

    /// Makes PostgreSQL answer `login` in German in this database (`lc_messages`, set for the
    /// login in this database only; `just locales` generates the locale).
    pub async fn messages_in_german(&self, login: &str) {
        diesel::sql_query(format!(
            "ALTER ROLE {login} IN DATABASE \"{}\" SET lc_messages = 'de_DE.UTF-8'",
            self.name
        ))
        .execute(&mut self.owner().await)
        .await
        .expect("German messages for the login (is the de_DE.UTF-8 locale generated? `just locales`)");
    }

    /// Every row of every table ([`EVERY_ROW`]), read as the owner.
    pub async fn every_row(&self) -> String {
        #[derive(diesel::QueryableByName)]
        struct Rows {
            #[diesel(sql_type = diesel::sql_types::Text)]
            rows: String,
        }
        diesel::sql_query(EVERY_ROW).get_result::<Rows>(&mut self.owner().await).await.unwrap().rows
    }
}

/// One statement printing every row of every table of the `public` schema, table by table,
/// each table's rows as JSON in a fixed order: the same text before and after something means
/// it changed no row of any table. Run it as the tables' owner (row-level security would hide
/// rows); on Citus, on the coordinator (it reads the distributed tables' shards).
pub const EVERY_ROW: &str = "SELECT string_agg(t.table_name || ': ' || (xpath('/row/r/text()', query_to_xml(\
    format('SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text), ''[]'') AS r FROM public.%I AS x', t.table_name), \
    false, true, '')))[1]::text, E'\\n' ORDER BY t.table_name) AS rows \
    FROM information_schema.tables AS t WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE'";

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop may run inside a runtime; a thread of its own can block on a runtime of its own.
        let server = self.server.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let mut admin = AsyncPgConnection::establish(&server).await.ok()?;
                diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

/// The least-privileged login the tests' servers use: it can log in, and it is a member of
/// `doorman_app`, nothing more (so `RESET ROLE` gains it nothing). Roles are per cluster: it is
/// created once, beside the template.
pub const SERVER_ROLE: &str = "doorman_test_server";

/// The least-privileged login the tests' admin APIs use: a member of `doorman_admin` only.
pub const ADMIN_ROLE: &str = "doorman_test_admin";

/// A login like [`SERVER_ROLE`] that may also set `lc_messages` (`GRANT SET ON PARAMETER`), as
/// an operator allows a login whose server messages are not in English.
pub const MESSAGES_ROLE: &str = "doorman_test_server_messages";

pub use crate::keys::{TEST_KEYS, test_keys};

/// A receipt store on `pool`, as the server has one.
pub fn receipt_store(pool: PgPool) -> PgReceiptStore {
    PgReceiptStore::new(pool, std::sync::Arc::new(test_keys()))
}

/// A tenant named after `team`, with that team linked and its agent set: what every test of
/// a delivery starts from.
pub async fn tenant_with_agent(
    operator: &TestOperator,
    team: &str,
    agent_url: &str,
    secret: &str,
) -> TenantId {
    let tenant = operator.create_tenant(&format!("tenant {team}")).await;
    operator.link(tenant, Some(team), None).await.expect("link the team");
    operator.set_agent(tenant, agent_url, secret).await.expect("set the agent");
    tenant
}

/// The server to create test databases on.
pub fn server_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_SERVER.to_owned())
}

/// `url` with its database name replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map(|i| i + 3).unwrap_or(0);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

/// `url` logging in as `user` (no password: the test server trusts loopback).
pub fn with_user(url: &str, user: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host = rest[..authority_end].rsplit('@').next().unwrap_or("");
    format!("{}{user}@{host}{}", &url[..scheme_end], &rest[authority_end..])
}

/// `url` with its host and port replaced by `addr` (to route it through a proxy), and
/// `sslmode=disable` unless the URL says otherwise: a fault proxy cuts the conversation at
/// a statement it recognises, and under the default `prefer` it would see only TLS records.
pub fn with_address(url: &str, addr: std::net::SocketAddr) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let userinfo = authority.rfind('@').map(|at| &authority[..=at]).unwrap_or("");
    let tail = &rest[authority_end..];
    let plaintext = if tail.contains("sslmode=") {
        ""
    } else if tail.contains('?') {
        "&sslmode=disable"
    } else {
        "?sslmode=disable"
    };
    format!("{}{userinfo}{addr}{tail}{plaintext}", &url[..scheme_end])
}

#[derive(diesel::QueryableByName)]
struct Exists {
    #[diesel(sql_type = Bool)]
    exists: bool,
}

async fn ensure_template(server: &str) -> String {
    let hash = migrations_hash();
    let template = format!("doorman_template_{hash:016x}");
    let mut admin = AsyncPgConnection::establish(server).await.expect("connect to TEST_DATABASE_URL");
    let lock_key = (hash >> 1) as i64;
    diesel::sql_query("SELECT pg_advisory_lock($1)")
        .bind::<BigInt, _>(lock_key)
        .execute(&mut admin)
        .await
        .expect("take the template lock");

    let found: Exists =
        diesel::sql_query("SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1) AS exists")
            .bind::<Text, _>(&template)
            .get_result(&mut admin)
            .await
            .expect("look for the template");
    if !found.exists {
        // Build under another name and rename when complete, so a crashed build never
        // leaves a half-migrated template behind.
        let building = format!("{template}_building");
        for sql in [
            format!("DROP DATABASE IF EXISTS \"{building}\" WITH (FORCE)"),
            format!("CREATE DATABASE \"{building}\""),
        ] {
            diesel::sql_query(sql).execute(&mut admin).await.expect("prepare the template");
        }
        migrations::run_pending(&with_database(server, &building)).await.expect("migrate the template");
        diesel::sql_query(format!("ALTER DATABASE \"{building}\" RENAME TO \"{template}\""))
            .execute(&mut admin)
            .await
            .expect("publish the template");
        drop_superseded_templates(&mut admin, &template).await;
    }
    // Under the same lock: the roles outlive databases, so they are made (or found) each time.
    create_login_roles(&mut admin).await;
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<BigInt, _>(lock_key)
        .execute(&mut admin)
        .await
        .expect("release the template lock");
    template
}

/// Creates (or finds) [`SERVER_ROLE`], [`ADMIN_ROLE`] and [`MESSAGES_ROLE`] on the server
/// `admin` is connected to, once the migrations have made the roles they are members of:
/// `NOINHERIT` members, which take their role with `SET ROLE` as each connection opens.
pub async fn create_login_roles(admin: &mut AsyncPgConnection) {
    create_logins(
        admin,
        "NOINHERIT",
        &[(SERVER_ROLE, "doorman_app"), (ADMIN_ROLE, "doorman_admin"), (MESSAGES_ROLE, "doorman_app")],
    )
    .await;
    diesel::sql_query(format!("GRANT SET ON PARAMETER lc_messages TO {MESSAGES_ROLE}"))
        .execute(admin)
        .await
        .expect("let a login set lc_messages");
}

/// [`SERVER_ROLE`] and [`ADMIN_ROLE`] as `INHERIT` members, which act as their role without
/// `SET ROLE`: what a Citus coordinator needs (it connects to the workers as the role a
/// statement runs as, and the group roles may not log in).
pub async fn create_inheriting_login_roles(admin: &mut AsyncPgConnection) {
    create_logins(admin, "INHERIT", &[(SERVER_ROLE, "doorman_app"), (ADMIN_ROLE, "doorman_admin")]).await;
}

async fn create_logins(admin: &mut AsyncPgConnection, inherit: &str, logins: &[(&str, &str)]) {
    for (login, member_of) in logins {
        diesel::sql_query(format!(
            "DO $$ BEGIN \
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{login}') THEN \
                 CREATE ROLE {login} LOGIN {inherit}; \
               END IF; \
               GRANT {member_of} TO {login}; \
             END $$"
        ))
        .execute(admin)
        .await
        .expect("create a least-privileged login role");
    }
}

/// How many templates of other migrations' versions are kept (the newest), for checkouts
/// testing side by side.
const KEPT_SUPERSEDED_TEMPLATES: i64 = 3;

/// Templates built from earlier versions of the migrations are of no further use, except to
/// another checkout of the repository testing at the same time on this server (a worktree on
/// another branch): dropping its template under it fails its next test. So the newest
/// [`KEPT_SUPERSEDED_TEMPLATES`] are kept and only older ones dropped. One still in use by
/// another run is left (DROP without FORCE refuses), to be dropped next time.
async fn drop_superseded_templates(admin: &mut AsyncPgConnection, current: &str) {
    #[derive(diesel::QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        datname: String,
    }
    let stale: Vec<Name> = diesel::sql_query(
        "SELECT datname::text FROM pg_database WHERE datname LIKE 'doorman\\_template\\_%' AND datname <> $1 \
         ORDER BY oid DESC OFFSET $2",
    )
    .bind::<Text, _>(current)
    .bind::<diesel::sql_types::BigInt, _>(KEPT_SUPERSEDED_TEMPLATES)
    .load(admin)
    .await
    .unwrap_or_default();
    for Name { datname } in stale {
        let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{datname}\"")).execute(admin).await;
    }
}

/// A hash of every migration file's and SQL definition file's path and content (`doorman
/// migrate` applies both).
fn migrations_hash() -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    collect_files(&root.join("migrations"), &mut files);
    collect_files(&root.join("crates/doorman-adapters/src/postgres/sql"), &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in files {
        file.strip_prefix(&root).unwrap_or(&file).hash(&mut hasher);
        std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
    }
    hasher.finish()
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{with_address, with_database};

    #[test]
    fn the_database_name_is_replaced_and_the_query_kept() {
        assert_eq!(with_database("postgres://u@h:5432/postgres", "x"), "postgres://u@h:5432/x");
        assert_eq!(
            with_database("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
    }

    #[test]
    fn the_address_is_replaced_and_the_rest_kept() {
        let addr = "127.0.0.1:6000".parse().unwrap();
        assert_eq!(
            with_address("postgres://u:p@h:5432/db?x=1", addr),
            "postgres://u:p@127.0.0.1:6000/db?x=1&sslmode=disable"
        );
        assert_eq!(with_address("postgres://h/db", addr), "postgres://127.0.0.1:6000/db?sslmode=disable");
        assert_eq!(
            with_address("postgres://h/db?sslmode=require", addr),
            "postgres://127.0.0.1:6000/db?sslmode=require"
        );
    }
}

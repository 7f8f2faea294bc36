//! A Citus cluster of a test's own: a coordinator and two workers, each a [`PgServer`] with
//! `shared_preload_libraries = 'citus'`, joined as an operator joins them
//! (`citus_set_coordinator_host`, `citus_add_node`), with a `doorman` database migrated by
//! `doorman migrate`'s own code, which distributes the receipts by tenant (ADR 22).
//!
//! Citus must be installed into the machine's PostgreSQL (`just citus` builds it from
//! `deploy/citus/`); without it [`CitusCluster::start`] panics saying so.

use doorman_domain::TenantId;

use crate::server::{PgServer, ServerOptions, pg_bin};

/// The database the cluster's tests use, on every node.
pub const DATABASE: &str = "doorman";

/// How many workers the cluster has.
pub const WORKERS: usize = 2;

/// A coordinator and its workers, running; all stopped and removed when dropped.
#[derive(Debug)]
pub struct CitusCluster {
    coordinator: PgServer,
    workers: Vec<PgServer>,
}

impl CitusCluster {
    /// Starts the three servers, creates the `doorman` database and the extension on each,
    /// and joins the workers to the coordinator. Blocking: call it from `spawn_blocking`.
    pub fn start() -> Self {
        let library = pg_bin().join("../lib/citus.so");
        assert!(
            library.exists(),
            "Citus is not installed ({} is missing): run `just citus`",
            library.display()
        );
        let node = || {
            PgServer::start(ServerOptions {
                // Two-phase commit for a transaction that writes on both workers needs prepared
                // transactions; each coordinator backend opens connections to every worker; a
                // worker that does not answer is given up inside Doorman's 1.5 s statement
                // timeout (docs/operations.md, "Running on Citus").
                // pg_stat_statements: tests count which statements ran on which node.
                conf:
                    "shared_preload_libraries = 'citus,pg_stat_statements'\nmax_prepared_transactions = 100\n\
                       max_connections = 200\ncitus.shard_count = 8\n\
                       citus.node_connection_timeout = 1000\n"
                        .to_owned(),
                ..ServerOptions::default()
            })
        };
        let coordinator = node();
        let workers: Vec<PgServer> = (0..WORKERS).map(|_| node()).collect();
        for server in std::iter::once(&coordinator).chain(&workers) {
            sql(server, "postgres", &format!("CREATE DATABASE {DATABASE}"));
            sql(server, DATABASE, "CREATE EXTENSION citus");
            sql(server, DATABASE, "CREATE EXTENSION pg_stat_statements");
        }
        sql(
            &coordinator,
            DATABASE,
            &format!("SELECT citus_set_coordinator_host('127.0.0.1', {})", coordinator.port()),
        );
        for worker in &workers {
            sql(&coordinator, DATABASE, &format!("SELECT citus_add_node('127.0.0.1', {})", worker.port()));
        }
        Self { coordinator, workers }
    }

    /// `doorman migrate` on the coordinator (the migrations, then the distribution), and the
    /// tests' login roles, which inherit the group roles (these may not log in on Citus).
    pub async fn migrate(&self) {
        let owner = self.url("postgres");
        doorman_adapters::postgres::migrations::run_pending(&owner).await.expect("migrate the coordinator");
        let mut admin = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&owner)
            .await
            .expect("connect to the coordinator");
        crate::database::create_inheriting_login_roles(&mut admin).await;
    }

    /// The coordinator's `doorman` database, logging in as `user`: what Doorman is given.
    pub fn url(&self, user: &str) -> String {
        self.coordinator.url(user, "127.0.0.1", DATABASE)
    }

    /// Runs `sql` on the coordinator's `doorman` database as `postgres`; its output.
    pub fn coordinator_sql(&self, query: &str) -> Option<String> {
        self.coordinator.sql(DATABASE, query)
    }

    /// Runs `sql` on worker `i`'s `doorman` database as `postgres`; its output.
    pub fn worker_sql(&self, i: usize, query: &str) -> Option<String> {
        self.workers[i].sql(DATABASE, query)
    }

    /// Runs `sql` on the coordinator's `doorman` database logging in as `user`: its output,
    /// or what psql said when the login or the statement was refused.
    pub fn coordinator_sql_as(&self, user: &str, query: &str) -> Result<String, String> {
        self.coordinator.sql_as(user, DATABASE, query)
    }

    /// The same on worker `i`.
    pub fn worker_sql_as(&self, i: usize, user: &str, query: &str) -> Result<String, String> {
        self.workers[i].sql_as(user, DATABASE, query)
    }

    /// Worker `i`'s `doorman` database, logging in as `user` (tests of what a role may do on
    /// a worker directly).
    pub fn worker_url(&self, i: usize, user: &str) -> String {
        self.workers[i].url(user, "127.0.0.1", DATABASE)
    }

    /// Worker `i`'s port (the address the cluster's metadata gives it is `127.0.0.1:port`).
    pub fn worker_port(&self, i: usize) -> u16 {
        self.workers[i].port()
    }

    /// How many times statements whose text is `LIKE pattern` ran on the coordinator (`None`)
    /// or on worker `Some(i)`, as the top-level statements a client sent (pg_stat_statements,
    /// which writes constants as `$n`).
    pub fn calls_of(&self, node: Option<usize>, pattern: &str) -> u64 {
        let query = format!(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '{}'",
            pattern.replace('\'', "''")
        );
        let answer = match node {
            None => self.coordinator_sql(&query),
            Some(i) => self.worker_sql(i, &query),
        };
        answer.and_then(|n| n.parse().ok()).expect("pg_stat_statements answers")
    }

    /// Which worker holds `tenant`'s shard of the receipts (and so of its payloads and request
    /// fingerprints, co-located with them).
    pub fn worker_of(&self, tenant: TenantId) -> usize {
        let port = self
            .coordinator_sql(&format!(
                "SELECT n.nodeport FROM pg_dist_placement AS p JOIN pg_dist_node AS n USING (groupid) \
                  WHERE p.shardid = get_shard_id_for_distribution_column('messaging_event_receipts', '{tenant}')"
            ))
            .and_then(|port| port.parse::<u16>().ok())
            .expect("the tenant's shard placement");
        self.workers.iter().position(|w| w.port() == port).expect("a worker of this cluster holds the shard")
    }

    /// The names of worker `i`'s shards of `table`.
    pub fn shards_on(&self, i: usize, table: &str) -> Vec<String> {
        self.coordinator_sql(&format!(
            "SELECT s.logicalrelid::text || '_' || s.shardid FROM pg_dist_shard AS s \
               JOIN pg_dist_placement AS p USING (shardid) JOIN pg_dist_node AS n USING (groupid) \
              WHERE s.logicalrelid = '{table}'::regclass AND n.nodeport = {} ORDER BY 1",
            self.workers[i].port()
        ))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
    }

    /// Stops worker `i` at once, as a crash would.
    pub fn stop_worker(&self, i: usize) {
        self.workers[i].stop_immediately();
    }

    /// Starts worker `i` again.
    pub fn start_worker(&self, i: usize) {
        self.workers[i].start_again();
    }
}

fn sql(server: &PgServer, database: &str, query: &str) {
    assert!(server.sql(database, query).is_some(), "`{query}` on port {} failed", server.port());
}

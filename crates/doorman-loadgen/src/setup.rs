//! A fresh database with tenants, the fake agent, and a `doorman serve` process.

use std::time::Duration;

use anyhow::Context;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_adapters::postgres::directory::AGENT_SECRET_COLUMN;
use doorman_adapters::postgres::migrations;
use doorman_adapters::secrets::SealedIn;
use doorman_domain::TenantId;
use doorman_testkit::FakeAgent;
use doorman_testkit::ServeProcess;
use doorman_testkit::database::{TEST_KEYS, test_keys, with_database};

use crate::Args;

pub const SIGNING_SECRET: &str = "loadgen-slack-signing-secret";
const AGENT_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const DATABASE: &str = "doorman_bench";

pub struct Run {
    /// The benchmark database, as its owner (setup and counting).
    pub database_url: String,
    /// The same as the server (and the floor's adapters) log in: the owner on one PostgreSQL
    /// (its connections take `doorman_app` with `SET ROLE`); on Citus a login of its own that
    /// inherits `doorman_app`, since there the group role may not log in to the workers.
    pub serve_url: String,
    pub agent: FakeAgent,
    pub server: Option<Server>,
    pub tenants: Vec<(TenantId, String)>,
    pub run_id: String,
    admin_url: String,
    citus_workers: Vec<String>,
}

impl Run {
    /// A fresh database with the tenants and the fake agent, and `server` (a `doorman`
    /// binary) serving it; without a server, for the floor.
    pub async fn prepare(args: &Args, server: Option<&std::path::Path>) -> anyhow::Result<Self> {
        Self::prepare_with(args, server, args.tenants, &[]).await
    }

    /// The same with `tenants` tenants, and `env` on top of the server's usual environment.
    pub async fn prepare_with(
        args: &Args,
        server: Option<&std::path::Path>,
        tenants: u16,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let admin_url = args.database_server.clone();
        recreate_database(&admin_url).await?;
        if !args.citus_workers.is_empty() {
            form_citus_cluster(&admin_url, &args.citus_workers).await?;
        }
        let database_url = plaintext_unless_asked(&with_database(&admin_url, DATABASE));
        match server {
            // Each binary migrates its own database, so an earlier revision (`--compare`)
            // runs on the schema it was built for.
            Some(binary) => migrate_with(binary, &database_url)?,
            None => migrations::run_pending(&database_url).await.map(drop).context("migrating")?,
        }

        let agent = FakeAgent::start_counting(AGENT_SECRET);
        let mut conn = AsyncPgConnection::establish(&database_url).await?;
        let count = tenants;
        let mut tenants = Vec::new();
        for i in 0..count {
            let team = format!("TBENCH{i:04}");
            let tenant = tenant_with_agent(&mut conn, &team, agent.url()).await?;
            tenants.push((tenant, team));
        }
        let serve_url = match args.citus_workers.is_empty() {
            true => database_url.clone(),
            false => inheriting_login(&mut conn, &database_url).await?,
        };
        let server = server.map(|binary| Server::start(binary, &serve_url, args, env)).transpose()?;
        let run_id = format!("{:x}", chrono::Utc::now().timestamp_millis() % 0xfffff);
        let citus_workers = args.citus_workers.clone();
        Ok(Self { database_url, serve_url, agent, server, tenants, run_id, admin_url, citus_workers })
    }

    /// Another tenant, `team` linked, with an agent of its own (a counting fake agent, signing
    /// as the others' does), added while the server runs (the directory's notices tell it): a
    /// shape that counts one tenant's dispatches apart from the rest's.
    pub async fn add_tenant_with_own_agent(&self, team: &str) -> anyhow::Result<(TenantId, FakeAgent)> {
        let agent = FakeAgent::start_counting(AGENT_SECRET);
        let mut conn = AsyncPgConnection::establish(&self.database_url).await?;
        let tenant = tenant_with_agent(&mut conn, team, agent.url()).await?;
        Ok((tenant, agent))
    }

    /// Stops the server if it still runs (SIGTERM, then its drain), and drops the database.
    pub async fn finish(mut self) -> anyhow::Result<()> {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
        drop(self.agent);
        for server in std::iter::once(&self.admin_url).chain(&self.citus_workers) {
            let mut admin = AsyncPgConnection::establish(server).await?;
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
        }
        Ok(())
    }
}

/// On Citus: the login the server uses there, `doorman_bench_server`, which inherits
/// `doorman_app` (made once per cluster; Citus creates it on the workers); `database_url` as it.
async fn inheriting_login(conn: &mut AsyncPgConnection, database_url: &str) -> anyhow::Result<String> {
    diesel::sql_query(
        "DO $$ BEGIN \
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'doorman_bench_server') THEN \
             CREATE ROLE doorman_bench_server LOGIN INHERIT; \
           END IF; \
         END $$",
    )
    .execute(conn)
    .await
    .context("creating the server's login")?;
    diesel::sql_query("GRANT doorman_app TO doorman_bench_server").execute(conn).await?;
    Ok(doorman_testkit::database::with_user(database_url, "doorman_bench_server"))
}

/// A tenant with `team` linked and the fake agent set, written in plain SQL on the three
/// directory tables every schema since the first has: the benchmark sets up its world the same
/// way whichever binary (`--compare`) migrated the database.
async fn tenant_with_agent(
    conn: &mut AsyncPgConnection,
    team: &str,
    agent_url: &str,
) -> anyhow::Result<TenantId> {
    let tenant = TenantId::generate();
    let sealed = test_keys().seal(AGENT_SECRET.as_bytes(), SealedIn { tenant, column: AGENT_SECRET_COLUMN });
    for (sql, text) in [
        ("INSERT INTO tenants (id, name) VALUES ($1, $2)", format!("tenant {team}")),
        (
            "INSERT INTO messaging_workspaces (tenant_id, platform, team_id) VALUES ($1, 'slack', $2)",
            team.to_owned(),
        ),
    ] {
        diesel::sql_query(sql)
            .bind::<SqlUuid, _>(tenant.as_uuid())
            .bind::<Text, _>(text)
            .execute(conn)
            .await?;
    }
    diesel::sql_query("INSERT INTO agent_bridges (tenant_id, url, signing_secret) VALUES ($1, $2, $3)")
        .bind::<SqlUuid, _>(tenant.as_uuid())
        .bind::<Text, _>(agent_url)
        .bind::<Text, _>(sealed)
        .execute(conn)
        .await
        .context("setting a tenant's agent")?;
    Ok(tenant)
}

/// `url` with `sslmode=disable` unless it names a mode: binaries before decision 21 connected
/// in plaintext whatever the URL said, so side by side both must, or the comparison measures
/// TLS. (What TLS costs is measured by running a binary that asks for it: docs/benchmarks.md.)
fn plaintext_unless_asked(url: &str) -> String {
    if url.contains("sslmode=") {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&sslmode=disable")
    } else {
        format!("{url}?sslmode=disable")
    }
}

/// `binary migrate` on `database_url`.
fn migrate_with(binary: &std::path::Path, database_url: &str) -> anyhow::Result<()> {
    let output = std::process::Command::new(binary)
        .arg("migrate")
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "error")
        .output()
        .with_context(|| format!("running {} migrate", binary.display()))?;
    if !output.status.success() {
        anyhow::bail!("{} migrate failed: {}", binary.display(), String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

async fn recreate_database(admin_url: &str) -> anyhow::Result<()> {
    let mut admin =
        AsyncPgConnection::establish(admin_url).await.context("connecting to the database server")?;
    for sql in
        [format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"), format!("CREATE DATABASE {DATABASE}")]
    {
        diesel::sql_query(sql).execute(&mut admin).await?;
    }
    Ok(())
}

/// Makes the coordinator's fresh bench database a Citus cluster's: the database and the
/// extension on every worker, then the coordinator's own host and each worker added (what
/// docs/operations.md's "Running on Citus" has an operator do once).
async fn form_citus_cluster(coordinator: &str, workers: &[String]) -> anyhow::Result<()> {
    for worker in workers {
        recreate_database(worker).await.with_context(|| format!("the bench database on worker {worker}"))?;
        let mut conn = AsyncPgConnection::establish(&with_database(worker, DATABASE)).await?;
        diesel::sql_query("CREATE EXTENSION citus")
            .execute(&mut conn)
            .await
            .context("CREATE EXTENSION citus")?;
    }
    let mut conn = AsyncPgConnection::establish(&with_database(coordinator, DATABASE)).await?;
    diesel::sql_query("CREATE EXTENSION citus").execute(&mut conn).await.context("CREATE EXTENSION citus")?;
    // postgres://user@host:port/db: the node's address as the other nodes will reach it.
    let host_port = |url: &str| -> anyhow::Result<(String, i32)> {
        let authority = url.split("://").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or_default();
        let address = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = address.rsplit_once(':').unwrap_or((address, "5432"));
        anyhow::ensure!(!host.is_empty(), "a Citus node's URL must name its host: {url}");
        Ok((host.to_owned(), port.parse().with_context(|| format!("the port of {url}"))?))
    };
    let (host, port) = host_port(coordinator)?;
    diesel::sql_query("SELECT citus_set_coordinator_host($1, $2)")
        .bind::<Text, _>(host)
        .bind::<diesel::sql_types::Integer, _>(port)
        .execute(&mut conn)
        .await?;
    for worker in workers {
        let (host, port) = host_port(worker)?;
        diesel::sql_query("SELECT citus_add_node($1, $2)")
            .bind::<Text, _>(host)
            .bind::<diesel::sql_types::Integer, _>(port)
            .execute(&mut conn)
            .await
            .with_context(|| format!("adding worker {worker}"))?;
    }
    Ok(())
}

/// The `doorman serve` under measurement.
pub struct Server {
    process: ServeProcess,
}

impl Server {
    fn start(
        binary: &std::path::Path,
        database_url: &str,
        args: &Args,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let (pool_size, background) = (args.pool_size.to_string(), args.background_pool_size.to_string());
        let mut env = vec![
            ("DATABASE_URL", database_url),
            ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
            ("DOORMAN_DB_POOL_SIZE", pool_size.as_str()),
            ("DOORMAN_DB_BACKGROUND_POOL_SIZE", background.as_str()),
            ("RUST_LOG", "error"),
            ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS),
            // The fake agent listens on http://127.0.0.1.
            ("DOORMAN_AGENT_ALLOW_PRIVATE", "true"),
        ];
        // Later entries win: the shape's settings, then the command line's.
        env.extend(extra.iter().copied());
        env.extend(args.server_env.iter().filter_map(|pair| pair.split_once('=')));
        let process = ServeProcess::spawn(binary, &env, &[]).with_context(|| {
            format!("starting {} (build it with cargo build --release)", binary.display())
        })?;
        Ok(Self { process })
    }

    pub fn base(&self) -> &str {
        self.process.base()
    }

    /// The server's own acknowledgement-latency quantiles for `route`, from its `/metrics`
    /// histogram (bucket upper bounds, so each figure is "at most"), in milliseconds.
    pub async fn server_side_latency(&self, route: &str, quantiles: &[f64]) -> Option<Vec<f64>> {
        let text =
            reqwest::get(format!("{}/metrics", self.process.metrics_base())).await.ok()?.text().await.ok()?;
        let needle = format!("route=\"{route}\"");
        let mut buckets: Vec<(f64, f64)> = text
            .lines()
            .filter(|l| l.starts_with("doorman_acknowledgement_seconds_bucket") && l.contains(&needle))
            .filter_map(|l| {
                let le = l.split("le=\"").nth(1)?.split('"').next()?;
                let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
                Some((le, l.rsplit(' ').next()?.parse().ok()?))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total = buckets.last()?.1;
        Some(
            quantiles
                .iter()
                .map(|q| {
                    buckets
                        .iter()
                        .find(|(_, count)| *count >= q * total)
                        .map_or(f64::NAN, |(le, _)| le * 1000.0)
                })
                .collect(),
        )
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Lines the server has logged so far.
    pub fn log_lines(&self) -> usize {
        self.process.logs().lines().count()
    }

    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.process.peak_rss_kib()
    }

    /// SIGTERM, then wait for the drain.
    pub async fn stop(self) {
        self.process.stop(Duration::from_secs(10)).await;
    }
}

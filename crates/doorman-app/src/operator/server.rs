//! `doorman admin serve`: one process serving the admin API ([`api`]) and the operator
//! console ([`console`]) over the same state, and running replay jobs. Assembled here, apart
//! from both, so neither face depends on the other.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use doorman_adapters::postgres::pool::{self, ADMIN_ROLE};
use doorman_adapters::postgres::{PgAdminKeys, PgConsoleSessions, PgOperatorPorts};
use doorman_domain::ReceiptStatus;
use doorman_domain::usecases::operator::{Operator, OperatorSettings};

use super::job_runner::Runner;
use super::metrics::AdminMetrics;
use super::observe::observe;
use super::state::AdminState;
use super::{api, console};
use crate::config::AdminConfig;
use crate::metrics_listener::MetricsListener;
use crate::process;
use crate::replays::Replays;

/// How long in-flight requests may take to finish once shutdown starts (replays included).
const REQUEST_GRACE: u64 = 30;

/// An admin API that is accepting requests, and running replay jobs.
#[derive(Debug)]
pub struct RunningAdmin {
    addr: SocketAddr,
    metrics: MetricsListener,
    handle: actix_web::dev::ServerHandle,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    runner: Runner,
}

impl RunningAdmin {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where `/metrics` answers (`DOORMAN_ADMIN_METRICS_BIND`).
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics.addr()
    }

    /// Stops accepting, lets requests in flight finish, and stops running replay jobs (a job
    /// left half done is resumed by another admin process, or this one's next start).
    pub async fn shutdown(self) {
        tracing::info!("admin API shutting down");
        self.handle.stop(true).await;
        let _ = self.task.await;
        self.runner.stop(Duration::from_secs(REQUEST_GRACE)).await;
        self.metrics.stop().await;
    }
}

/// Builds the state and starts serving on `config.bind` (port 0 picks a free one). Must run
/// on the main runtime: the pool and replays live there.
pub async fn start(config: AdminConfig) -> anyhow::Result<RunningAdmin> {
    let c_messages = process::check_login(config.database_url.expose(), ADMIN_ROLE).await?;
    let pool = pool::connect_as(
        config.database_url.expose(),
        &pool::PoolSettings { c_messages, ..config.pool.clone() },
        Some(ADMIN_ROLE),
    );
    let dispatch = &config.dispatch;
    let settings = OperatorSettings {
        install_base_url: dispatch.slack_app.as_ref().map(|install| install.public_url.clone()),
        console_base_url: config.console.url.as_ref().map(url::Url::to_string),
        stranded_after: ReceiptStatus::STRANDED_AFTER,
        replay_hold: crate::replays::hold(dispatch.bridge.dispatch_timeout),
    };
    let ports = PgOperatorPorts::new(pool.clone(), Some(dispatch.keys.clone()), dispatch.bridge.destinations);
    let state = web::Data::new(AdminState {
        operator: Operator::new(ports, settings),
        keys: PgAdminKeys::new(pool.clone()),
        replays: Replays::new(pool.clone(), dispatch)?,
        sessions: PgConsoleSessions::new(pool.clone()),
        console: config.console.clone(),
        pool,
        metrics: AdminMetrics::default(),
    });
    let runner = Runner::spawn(state.clone().into_inner());
    let render_state = state.clone();
    let metrics =
        MetricsListener::start(config.metrics_bind, Arc::new(move || render_state.metrics.render()))?;
    let listener = TcpListener::bind(config.bind).with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr()?;
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .wrap(from_fn(observe))
            .configure(api::routes)
            .configure(console::routes)
    })
    .workers(config.workers)
    .disable_signals()
    .shutdown_timeout(REQUEST_GRACE)
    .listen(listener)?
    .run();
    let handle = server.handle();
    let task = tokio::spawn(server);
    tracing::info!(
        %addr,
        workers = config.workers,
        db_pool = config.pool.max_size,
        installs = config.dispatch.slack_app.is_some(),
        agent_allow_private = config.dispatch.bridge.destinations.allow_private,
        "doorman admin API listening"
    );
    Ok(RunningAdmin { addr, metrics, handle, task, runner })
}

/// Serves until SIGTERM or SIGINT, then shuts down gracefully. `started` is told the address
/// once it listens, and where its metrics answer (the command prints them).
pub async fn run(config: AdminConfig, started: impl FnOnce(SocketAddr, SocketAddr)) -> anyhow::Result<()> {
    let admin = start(config).await?;
    started(admin.addr(), admin.metrics_addr());
    process::wait_for_signal().await?;
    admin.shutdown().await;
    Ok(())
}

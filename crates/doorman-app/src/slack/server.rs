//! `doorman serve`: start-up, serving, graceful shutdown.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{App, HttpServer, web};
use anyhow::Context;
use doorman_adapters::notified_directory::NotifiedDirectory;
use doorman_adapters::postgres::{
    self, PgActivity, PgAgentHealth, PgInstallStore, PgInstallations, PgReceiptStore, PgRedeliveries,
    PgStoredEvents, PgTenantDirectory, PoolSettings,
};
use doorman_domain::Inbound;
use doorman_domain::ports::SystemClock;
use doorman_domain::usecases::install::Installs;

use super::activity::ActivityCounts;
use super::log_summary::LogSummary;
use super::metrics::Metrics;
use super::operational::OperationalTask;
use super::redelivery::RedeliveryTask;
use super::runner::DeliveryRunner;
use super::{AppState, InstallFlow, deliveries, ops};
use crate::config::ServeConfig;
use crate::metrics_listener::MetricsListener;
use crate::process;

/// How long in-flight HTTP requests may take to finish once shutdown starts. Answers are
/// fast (Slack's deadline is 3 s); this is not the dispatch drain.
const REQUEST_GRACE: u64 = 5;

/// A server that is accepting requests.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    metrics: MetricsListener,
    handle: actix_web::dev::ServerHandle,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    directory_listener: tokio::task::JoinHandle<()>,
    watch: tokio::task::JoinHandle<()>,
    refusal_flush: tokio::task::JoinHandle<()>,
    runner: DeliveryRunner,
    redelivery: Option<RedeliveryTask>,
    agent_health: tokio::task::JoinHandle<()>,
    /// This process's activity counts, flushed to the rollup ([`super::activity`]), once more
    /// after the drain.
    activity: (Arc<ActivityCounts>, PgActivity, super::activity::Flusher),
    /// The operational webhook's sender, when the deployment has one.
    operational: Option<OperationalTask>,
    drain_timeout: Duration,
}

/// What a shutdown left behind.
#[derive(Debug, PartialEq, Eq)]
pub struct Drained {
    /// Dispatches still running when the drain timeout ran out. Their receipts stay
    /// claimed and unhandled, listed by `doorman receipts stranded`.
    pub unfinished: usize,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where `/metrics` answers (`DOORMAN_METRICS_BIND`).
    pub fn metrics_addr(&self) -> SocketAddr {
        self.metrics.addr()
    }

    /// Stops accepting, lets in-flight requests answer, then waits up to the drain timeout
    /// for in-flight dispatches.
    pub async fn shutdown(self) -> Drained {
        tracing::info!(
            in_flight = self.runner.in_flight(),
            "shutting down: no new requests; draining dispatches"
        );
        self.handle.stop(true).await;
        let _ = self.task.await;
        // No redelivery is taken once draining starts: what was taken drains with the rest.
        if let Some(redelivery) = self.redelivery {
            redelivery.stop().await;
        }
        let unfinished = self.runner.drain(self.drain_timeout).await;
        let (counts, rollup, flusher) = self.activity;
        flusher.stop().await;
        counts.flush(&rollup).await;
        if let Some(operational) = self.operational {
            operational.stop().await;
        }
        self.metrics.stop().await;
        self.directory_listener.abort();
        self.watch.abort();
        self.refusal_flush.abort();
        self.agent_health.abort();
        if unfinished == 0 {
            tracing::info!("all dispatches finished; exiting");
        } else {
            tracing::error!(
                unfinished,
                drain_timeout_s = self.drain_timeout.as_secs(),
                "drain timeout reached with dispatches unfinished; their receipts stay stranded (doorman receipts stranded)"
            );
        }
        Drained { unfinished }
    }
}

/// Builds everything and starts serving on `config.bind` (port 0 picks a free one). Must
/// run on the main (multi-threaded) runtime: the pool and the dispatches live there.
pub async fn start(config: ServeConfig) -> anyhow::Result<RunningServer> {
    let c_messages = process::check_login(config.database_url.expose(), postgres::pool::APP_ROLE).await?;
    let pool = postgres::pool::connect(
        config.database_url.expose(),
        &PoolSettings { c_messages, ..config.pool.clone() },
    );
    let background_pool = postgres::pool::connect(
        config.database_url.expose(),
        &PoolSettings { c_messages, ..config.background_pool.clone() },
    );
    check_keys(&pool, &config).await?;
    let directory = NotifiedDirectory::new(PgTenantDirectory::new(pool.clone(), config.keys.clone()));
    // Until it has subscribed, the directory resolves from the database.
    let directory_listener =
        postgres::listener::spawn(config.listen_database_url.expose(), directory.notices());
    let directory_status = directory.status();
    let (bridge, oauth) = crate::outbound::clients(&config.bridge, config.slack_app.as_ref())?;
    let installs = match (&config.slack_app, &oauth) {
        (Some(install), Some(oauth)) => Some(Arc::new(InstallFlow {
            installs: Installs::new(
                PgInstallStore::new(pool.clone(), config.keys.clone()),
                oauth.clone(),
                SystemClock,
            ),
            settings: install.clone(),
        })),
        _ => None,
    };
    let doorman = Inbound::new(
        directory,
        bridge,
        PgReceiptStore::with_pools(pool.clone(), background_pool.clone(), config.keys.clone()),
        PgInstallations::new(background_pool.clone(), config.keys.clone(), oauth),
        SystemClock,
        config.retention,
    );
    let metrics = Arc::new(Metrics::new());
    let operational =
        super::operational::start(&background_pool, config.operational_webhook.as_ref(), metrics.clone())?;
    let watch = super::watch::spawn(background_pool.clone(), metrics.clone());
    let circuit_changes = doorman.bridge().circuit_changes();
    let activity = Arc::new(ActivityCounts::default());
    let rollup = PgActivity::new(background_pool.clone());
    let activity_flush = super::activity::spawn(activity.clone(), rollup.clone());
    let runner = DeliveryRunner::new(doorman, metrics.clone(), activity.clone());
    // The platform is told what these find, when it has an operational webhook.
    let outbox = operational.as_ref().map(|operational| operational.outbox.clone());
    let agent_health = super::agent_health::spawn(
        circuit_changes,
        PgAgentHealth::new(background_pool.clone()),
        outbox.clone(),
        config.agent_disable_after,
        super::agent_health::seen_within(config.bridge.circuit.cooldown),
    );
    let redelivery = RedeliveryTask::spawn(
        runner.clone(),
        PgRedeliveries::new(PgStoredEvents::new(background_pool.clone(), config.keys.clone())),
        outbox,
        metrics.clone(),
        config.redelivery,
    );
    let refusals = Arc::new(deliveries::refusal_summary());
    let refusal_flush = spawn_refusal_flush(refusals.clone());
    let state = web::Data::new(AppState {
        runner: runner.clone(),
        verifier: Arc::new(config.verifier.clone()),
        metrics,
        directory: directory_status,
        pool,
        max_body_bytes: config.max_body_bytes,
        body_read_timeout: config.body_read_timeout,
        installs,
        refusals,
    });

    let render_state = state.clone();
    let metrics =
        MetricsListener::start(config.metrics_bind, Arc::new(move || ops::render_metrics(&render_state)))?;
    let listener = TcpListener::bind(config.bind).with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr()?;
    let server = HttpServer::new(move || App::new().app_data(state.clone()).configure(super::routes))
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
        db_background_pool = config.background_pool.max_size,
        signing_secrets = config.verifier.secret_count(),
        encryption_key = config.keys.current(),
        max_in_flight = config.bridge.limits.total.get(),
        max_in_flight_per_tenant = config.bridge.limits.per_tenant.get(),
        agent_allow_private = config.bridge.destinations.allow_private,
        retention = %humantime::format_duration(config.retention.keep_for()),
        dispatch_timeout = %humantime::format_duration(config.bridge.dispatch_timeout),
        drain_timeout = %humantime::format_duration(config.drain_timeout),
        redelivery_in_flight = config.redelivery.in_flight,
        redelivery_per_second = config.redelivery.per_second,
        redelivery_hold = %humantime::format_duration(config.redelivery.hold),
        operational_webhook = config.operational_webhook.is_some(),
        "doorman listening"
    );
    Ok(RunningServer {
        addr,
        metrics,
        handle,
        task,
        directory_listener,
        watch,
        refusal_flush,
        runner,
        redelivery,
        agent_health,
        activity: (activity, rollup, activity_flush),
        operational: operational.map(|operational| operational.sender),
        drain_timeout: config.drain_timeout,
    })
}

/// Every second, the summaries of 503 answers that no answer has logged yet: a burst that
/// stops is still reported in full.
fn spawn_refusal_flush(refusals: Arc<LogSummary>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(super::log_summary::EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            for summary in refusals.flush_due(std::time::Instant::now()) {
                deliveries::log_refusals(summary, None);
            }
        }
    })
}

/// Refuses to start when a stored secret is sealed with a key that is not configured (or not
/// sealed at all): every tenant using it would be answered 503. With the database down the
/// check cannot run; it is logged, and each such tenant is refused (and logged) on its own.
async fn check_keys(pool: &postgres::PgPool, config: &ServeConfig) -> anyhow::Result<()> {
    let uses = match postgres::directory::sealed_key_ids(pool).await {
        Ok(uses) => uses,
        Err(error) => {
            tracing::warn!(error = %error, "could not check which keys the stored secrets use (database unavailable)");
            return Ok(());
        }
    };
    let unsealed: i64 = uses.iter().filter(|u| u.key_id.is_empty()).map(|u| u.secrets).sum();
    if unsealed > 0 {
        anyhow::bail!(
            "{unsealed} stored agent secret(s) are not encrypted: run `doorman secrets rotate` with DOORMAN_ENCRYPTION_KEYS first"
        );
    }
    let missing: Vec<String> = uses
        .iter()
        .filter(|u| !u.key_id.is_empty() && !config.keys.has(&u.key_id))
        .map(|u| format!("{:?} ({} secrets)", u.key_id, u.secrets))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "stored secrets are sealed with encryption key(s) {} that DOORMAN_ENCRYPTION_KEYS does not hold; add them (the first key still seals)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Serves until SIGTERM or SIGINT, then shuts down gracefully. `started` is told the address
/// once it listens (the command prints it).
/// `started` is told where it listens, and where its metrics answer.
pub async fn run(
    config: ServeConfig,
    started: impl FnOnce(SocketAddr, SocketAddr),
) -> anyhow::Result<Drained> {
    let server = start(config).await?;
    started(server.addr(), server.metrics_addr());
    process::wait_for_signal().await?;
    Ok(server.shutdown().await)
}

//! The Slack-facing server, `doorman serve`: Slack's deliveries acknowledged, deduplicated
//! and dispatched, the install flow, the probes, and what keeps it observable.
//!
//! - [`server`]: start-up, serving, graceful shutdown; the rest of the crate starts it through
//!   [`start`] and [`run`].
//! - the routes (here) and their handlers: [`deliveries`] (the three Slack routes),
//!   [`install`], [`ops`]. Handlers convert at the edge (request → domain value, outcome →
//!   response); the one place outcomes become statuses is [`responses`].
//! - [`runner`]: runs the use cases on the main runtime and tracks background dispatches so
//!   shutdown can drain them.
//! - [`metrics`], [`log_summary`]: its Prometheus metrics, and its repeated log lines
//!   summarised once a second.
//! - [`watch`]: the once-a-minute count of stranded and failed receipts behind the gauges.
//! - [`redelivery`]: the redelivery runner, for tenants that turned redelivery on (ADR 26).
//! - [`agent_health`]: since when each tenant's agent has been failing, and agents failing too
//!   long disabled.
//! - [`operational`]: the operational webhook's outbox and sender, when the deployment has one
//!   (issue 41).

pub mod activity;
pub mod agent_health;
mod body;
pub mod deliveries;
mod install;
pub mod log_summary;
pub mod metrics;
pub mod operational;
pub mod ops;
pub mod redelivery;
pub mod responses;
pub mod runner;
pub mod server;
pub mod watch;

use std::sync::Arc;

use actix_web::web;
use doorman_adapters::notified_directory::DirectoryStatus;
use doorman_adapters::postgres::{PgInstallStore, PgPool};
use doorman_adapters::slack::oauth::SlackOAuthClient;
use doorman_domain::ports::SystemClock;
use doorman_domain::usecases::install::Installs;

use doorman_adapters::slack::Verifier;

use self::log_summary::LogSummary;
use self::metrics::Metrics;
use self::runner::DeliveryRunner;
pub use self::server::{Drained, RunningServer, run, start};
use crate::config::SlackInstall;

/// What every handler can reach. Concrete types, chosen once.
#[derive(Debug, Clone)]
pub struct AppState {
    pub runner: DeliveryRunner,
    pub verifier: Arc<Verifier>,
    pub metrics: Arc<Metrics>,
    /// The directory's memory, for its gauges.
    pub directory: DirectoryStatus,
    pub pool: PgPool,
    pub max_body_bytes: usize,
    pub body_read_timeout: std::time::Duration,
    /// `None`: installs are off and their routes answer 404.
    pub installs: Option<Arc<InstallFlow>>,
    /// 503 answers, logged as once-a-second summaries ([`deliveries::REFUSALS`]).
    pub refusals: Arc<LogSummary>,
}

/// The install use cases over their concrete adapters, and the settings the pages need.
#[derive(Debug)]
pub struct InstallFlow {
    pub installs: Installs<PgInstallStore, SlackOAuthClient, SystemClock>,
    pub settings: SlackInstall,
}

pub fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/slack/events", web::post().to(deliveries::events))
        .route("/slack/commands", web::post().to(deliveries::commands))
        .route("/slack/interactions", web::post().to(deliveries::interactions))
        .route("/slack/install/{token}", web::get().to(install::start))
        .route("/slack/oauth/callback", web::get().to(install::callback))
        .route("/healthz", web::get().to(crate::probes::healthz))
        .route("/readyz", web::get().to(ops::readyz));
}

//! HTTP: routes and handlers. Handlers convert at the edge (request → domain value,
//! outcome → response); the one place outcomes become statuses is [`responses`].

mod body;
mod install;
pub mod ops;
pub mod responses;
pub mod slack;

use std::sync::Arc;

use actix_web::web;
use doorman_adapters::notified_directory::DirectoryStatus;
use doorman_adapters::postgres::{PgInstallStore, PgPool};
use doorman_adapters::slack::oauth::SlackOAuthClient;
use doorman_domain::ports::SystemClock;
use doorman_domain::usecases::install::Installs;

use crate::config::SlackInstall;
use doorman_adapters::slack::Verifier;

use crate::log_summary::LogSummary;
use crate::metrics::Metrics;
use crate::runner::DeliveryRunner;

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
    /// 503 answers, logged as once-a-second summaries ([`slack::REFUSALS`]).
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
        .route("/slack/events", web::post().to(slack::events))
        .route("/slack/commands", web::post().to(slack::commands))
        .route("/slack/interactions", web::post().to(slack::interactions))
        .route("/slack/install/{token}", web::get().to(install::start))
        .route("/slack/oauth/callback", web::get().to(install::callback))
        .route("/healthz", web::get().to(ops::healthz))
        .route("/readyz", web::get().to(ops::readyz));
}

//! Operational endpoints: readiness (on the Slack-facing listener, for a load balancer; the
//! answers are in `crate::probes`), and what `/metrics` renders (on a listener of its own,
//! `crate::metrics_listener`).

use actix_web::{HttpResponse, web};
use doorman_adapters::postgres::migrations::{self, Readiness};

use super::AppState;
use super::metrics::Gauges;
use crate::probes;

/// Ready to take traffic: the database answers, accepts writes and has every migration this
/// binary embeds.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let found = migrations::readiness(&state.pool).await;
    state.metrics.readiness(matches!(found, Ok(Readiness::Ready)));
    probes::readiness(found)
}

/// The server's metrics, now.
pub fn render_metrics(state: &AppState) -> String {
    let gauges = Gauges {
        open_circuits: state.runner.live_path().bridge().open_circuits(),
        in_flight: state.runner.live_path().bridge().in_flight(),
        directory_listening: state.directory.is_listening(),
        directory_remembered: state.directory.remembered(),
        directory_lookups: state.directory.lookups(),
        directory_notices: state.directory.notices(),
    };
    state.metrics.render(&gauges)
}

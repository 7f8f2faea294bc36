//! Operational endpoints: liveness and readiness (on the Slack-facing listener, for a load
//! balancer), and what `/metrics` renders (on a listener of its own, `crate::metrics_listener`).

use actix_web::{HttpResponse, web};
use doorman_adapters::postgres::migrations::{self, Readiness};
use serde_json::json;

use super::AppState;
use crate::metrics::Gauges;

/// The process is up and answering.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// Ready to take traffic: the database answers, accepts writes and has every migration this
/// binary embeds.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let found = migrations::readiness(&state.pool).await;
    state.metrics.readiness(matches!(found, Ok(Readiness::Ready)));
    readiness(found)
}

/// The `/readyz` answer for what the database check found (the server's and the admin API's
/// alike).
pub fn readiness(found: Result<Readiness, doorman_domain::StorageError>) -> HttpResponse {
    match found {
        Ok(Readiness::Ready) => HttpResponse::Ok().json(json!({ "status": "ready" })),
        Ok(Readiness::MigrationsPending) => HttpResponse::ServiceUnavailable()
            .json(json!({ "status": "not ready", "reason": "migrations pending" })),
        Ok(Readiness::ReadOnly) => HttpResponse::ServiceUnavailable()
            .json(json!({ "status": "not ready", "reason": "database accepts no writes" })),
        Err(error) => {
            tracing::warn!(error = %error, "readiness check: database unavailable");
            HttpResponse::ServiceUnavailable()
                .json(json!({ "status": "not ready", "reason": "database unavailable" }))
        }
    }
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

//! The answers of the liveness and readiness probes, the same on both serving processes'
//! listeners (`doorman serve`'s and `doorman admin serve`'s), so a load balancer reads them
//! alike.

use actix_web::HttpResponse;
use doorman_adapters::postgres::migrations::Readiness;
use serde_json::json;

/// The process is up and answering.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "status": "ok" }))
}

/// The `/readyz` answer for what the database check found.
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

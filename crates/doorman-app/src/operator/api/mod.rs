//! The admin API (`doorman admin serve`): the platform's backend drives Doorman over HTTP with
//! a key it holds. A process of its own, logged in as a member of `doorman_admin` (it writes
//! the directory; the Slack-facing `doorman serve` keeps `doorman_app`, which cannot).
//!
//! Handlers only convert: JSON and query strings into the operator use cases' arguments, their
//! answers into documents (`crate::documents`) and their refusals into problem details
//! ([`crate::operator::problem`]). Two middlewares wrap them: [`crate::operator::observe`] (a
//! request id, metrics, a log line, and problem details for the framework's own errors) around
//! everything, the console included, and [`authenticate`] (the bearer key) around `/admin/v1`
//! except its OpenAPI document.

pub mod activity;
mod agents;
mod audit;
mod body;
pub mod documents;
mod events;
mod installs;
mod keys;
mod numbers;
pub mod openapi;
pub mod refusals;
mod replays;
mod tenants;
mod workspaces;

use std::future::{Ready, ready};

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, web};
use doorman_adapters::postgres::admin::keys::Presented;
use doorman_adapters::postgres::migrations;
use doorman_domain::{Actor, Caller, KeyId, KeyRefusal, RequestId};

use self::body::json_error;
pub use self::openapi::document as openapi_document;
use super::problem::ApiError;
use super::state::AdminState;

/// The most a request body may be.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The caller the [`authenticate`] middleware found: a handler that takes this only runs for
/// a valid key.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Caller);

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            request
                .extensions()
                .get::<Caller>()
                .cloned()
                .map(Authenticated)
                .ok_or_else(ApiError::unauthorized),
        )
    }
}

/// A path's routes, one per method, and for any other method 405 with `Allow` naming them.
macro_rules! resource {
    ($path:literal, $($method:ident => $handler:path),+ $(,)?) => {{
        let allow: &'static str = concat!($(stringify!($method), ", "),+).trim_end_matches(", ");
        web::resource($path)
            $(.route(web::method(actix_web::http::Method::$method).to($handler)))+
            .default_service(web::to(move || async move { not_allowed(allow) }))
    }};
}

pub fn routes(config: &mut web::ServiceConfig) {
    let json =
        web::JsonConfig::default().limit(MAX_BODY_BYTES).error_handler(|error, _| json_error(&error).into());
    config
        .app_data(json)
        .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .service(resource!("/healthz", GET => crate::probes::healthz))
        .service(resource!("/readyz", GET => readyz))
        .service(resource!("/admin/v1/openapi.json", GET => openapi_json))
        .service(
            web::scope("/admin/v1")
                .wrap(from_fn(authenticate))
                .service(resource!("/tenants", GET => tenants::list, POST => tenants::create))
                .service(resource!("/tenants/{id}", GET => tenants::get, PATCH => tenants::rename, DELETE => tenants::delete))
                .service(resource!("/tenants/{id}/retain-payloads", PUT => tenants::retain_payloads))
                .service(resource!("/tenants/{id}/redelivery", PUT => tenants::redelivery))
                .service(resource!("/tenants/{id}/read-only-portals-read-payloads", PUT => tenants::read_only_portals_read_payloads))
                .service(resource!("/tenants/{id}/workspaces", GET => workspaces::list, POST => workspaces::link))
                .service(resource!("/tenants/{id}/workspaces/{workspace_id}", DELETE => workspaces::unlink))
                .service(resource!("/tenants/{id}/agent", GET => agents::get, PUT => agents::set))
                .service(resource!("/tenants/{id}/agent/pause", POST => agents::pause))
                .service(resource!("/tenants/{id}/agent/resume", POST => agents::resume))
                .service(resource!("/tenants/{id}/agent/remove", POST => agents::remove))
                .service(resource!("/tenants/{id}/install-links", POST => installs::create_link))
                .service(resource!("/tenants/{id}/installations", GET => installs::list))
                .service(resource!("/tenants/{id}/installations/{workspace_id}", DELETE => installs::remove))
                .service(resource!("/tenants/{id}/activity", GET => activity::get))
                .service(resource!("/tenants/{id}/events", GET => events::list))
                .service(resource!("/tenants/{id}/events/{event_id}", GET => events::get))
                .service(resource!("/tenants/{id}/events/{event_id}/replay", POST => replays::replay_one))
                .service(resource!("/tenants/{id}/replays", GET => replays::list, POST => replays::replay_many))
                .service(resource!("/tenants/{id}/replays/{job_id}", GET => replays::get))
                .service(resource!("/events", GET => events::find))
                .service(resource!("/overview", GET => activity::overview))
                .service(resource!("/audit", GET => audit::list))
                .service(resource!("/keys", GET => keys::list, POST => keys::create))
                .service(resource!("/keys/{key_id}", GET => keys::get, DELETE => keys::revoke))
                .service(resource!("/keys/{key_id}/sign-in-links", POST => keys::sign_in_link)),
        )
        .default_service(web::to(|| async {
            HttpResponse::from_error(ApiError::not_found("no such route"))
        }));
}

/// 405 for a known route asked with another method, naming the ones it takes.
fn not_allowed(allow: &'static str) -> HttpResponse {
    let mut response = HttpResponse::from_error(ApiError::new(
        actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        format!("this route takes {allow}"),
    ));
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The bearer key of the request, checked against the stored keys (their hashes, in constant
/// time); nothing is cached, so a revocation or an expiry holds from the next request.
/// Missing, malformed, unknown, wrong, revoked or expired: the same 401 with
/// `WWW-Authenticate: Bearer` (a caller learns nothing of other keys), counted by reason and
/// logged with the key's id when it had one and the client's address. The key's secret is
/// never logged.
async fn authenticate(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let state = request.app_data::<web::Data<AdminState>>().cloned();
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .map(str::to_owned);
    let (Some(state), Some(presented)) = (state.clone(), presented) else {
        refused(&request, state.as_ref().map(|s| s.get_ref()), KeyRefusal::Missing, None);
        return Ok(request.error_response(ApiError::unauthorized()).map_into_right_body());
    };
    let key = match state.keys.authenticate(&presented).await {
        Ok(Presented::Valid(key)) => key,
        Ok(Presented::Refused { reason, key }) => {
            refused(&request, Some(&state), reason, key);
            return Ok(request.error_response(ApiError::unauthorized()).map_into_right_body());
        }
        Err(error) => return Ok(request.error_response(ApiError::storage(&error)).map_into_right_body()),
    };
    let request_id = request.extensions().get::<RequestId>().cloned().unwrap_or_else(RequestId::generate);
    request.extensions_mut().insert(Caller { actor: Actor::Key(key), request: request_id });
    next.call(request).await.map(ServiceResponse::map_into_left_body)
}

/// A failed authentication: counted by reason, and logged with what identifies the attempt.
fn refused(request: &ServiceRequest, state: Option<&AdminState>, reason: KeyRefusal, key: Option<KeyId>) {
    if let Some(state) = state {
        state.metrics.refused(reason);
    }
    tracing::warn!(
        reason = reason.as_str(),
        key.id = key.map(tracing::field::display),
        client.address = request.peer_addr().map(|a| a.ip().to_string()),
        route = request.match_pattern().unwrap_or_else(|| request.path().to_owned()),
        "admin API request refused: no valid key"
    );
}

async fn readyz(state: web::Data<AdminState>) -> HttpResponse {
    let found = migrations::readiness(&state.pool).await;
    state.metrics.readiness(matches!(found, Ok(migrations::Readiness::Ready)));
    crate::probes::readiness(found)
}

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(openapi::document())
}

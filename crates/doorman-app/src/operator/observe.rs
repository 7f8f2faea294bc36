//! The middleware around every request of `doorman admin serve`, the API's and the console's:
//! a request id, the metrics, one log line, and problem details for the errors the framework
//! answers itself.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use doorman_domain::{Actor, Caller, RequestId};

use super::problem::{ApiError, PROBLEM_JSON};
use super::state::AdminState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Around every request: its id (the client's `X-Request-Id` if it is printable and short,
/// else a fresh one; echoed back and recorded in the audit trail), its metrics, one log line,
/// and problem details for errors the framework answers itself (an unknown route, a wrong
/// method, a body too large).
pub async fn observe(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let request_id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| RequestId::new(v).ok())
        .unwrap_or_else(RequestId::generate);
    request.extensions_mut().insert(request_id.clone());
    let (method, state) =
        (request.method().to_string(), request.app_data::<web::Data<AdminState>>().cloned());
    let mut response = next.call(request).await?.map_into_boxed_body();
    let content_type = response.headers().get(header::CONTENT_TYPE).map(|v| v.as_bytes().to_vec());
    let is_problem = content_type.as_deref() == Some(PROBLEM_JSON.as_bytes());
    // The console answers its refusals as pages of its own.
    let is_page = content_type.is_some_and(|v| v.starts_with(b"text/html"));
    if response.status().as_u16() >= 400 && !is_problem && !is_page {
        let status = response.status();
        let kind = if status.as_u16() == 405 { "method-not-allowed" } else { "http" };
        let detail = status.canonical_reason().unwrap_or("error").to_lowercase();
        let problem = HttpResponse::from_error(ApiError::new(status, kind, detail));
        response = response.into_response(problem);
    }
    if let Ok(value) = HeaderValue::from_str(request_id.as_str()) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let route = response.request().match_pattern().unwrap_or_else(|| "unmatched".to_owned());
    let status = response.status().as_u16();
    if let Some(state) = state {
        state.metrics.answered(&method, &route, status, started.elapsed());
    }
    let key = match response.request().extensions().get::<Caller>().map(|c| c.actor.clone()) {
        Some(Actor::Key(key)) => Some(key.id),
        _ => None,
    };
    tracing::info!(
        request.id = %request_id,
        key.id = key.map(tracing::field::display),
        method = %method,
        route = %route,
        status,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "admin request"
    );
    Ok(response)
}

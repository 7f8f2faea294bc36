//! The three Slack routes. They differ only in how the body is parsed.

use std::time::Instant;

use actix_web::{HttpRequest, HttpResponse, web};
use doorman_adapters::slack::{self, Parsed, Rejection, SignatureHeaders, delivery_from_headers};
use doorman_domain::{Acknowledgement, Delivery, StorageError, TenantId, Unavailability};
use tracing::{Instrument, field};

use super::AppState;
use super::body::read_limited;
use super::log_summary::{LogSummary, Summary};
use super::responses;

/// The reasons a delivery is refused (503, or 500 for `storage_error`: [`Unavailability::as_str`]), each logged as a
/// summary at most once a second ([`super::log_summary`]) rather than once per answer: under
/// overload they come thousands a second. The metrics count each answer.
pub const REFUSALS: [&str; 8] =
    ["no_agent", "misconfigured", "paused", "circuit_open", "busy", "storage", "storage_error", "internal"];

/// The summaries of 503 answers.
pub fn refusal_summary() -> LogSummary {
    LogSummary::new(&REFUSALS)
}

#[derive(Debug, Clone, Copy)]
enum Route {
    Events,
    Commands,
    Interactions,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Events => "events",
            Route::Commands => "commands",
            Route::Interactions => "interactions",
        }
    }

    fn parse(self, content_type: Option<&str>, body: &[u8], delivery: Delivery) -> Result<Parsed, Rejection> {
        match self {
            Route::Events => slack::parse_events(content_type, body, delivery),
            Route::Commands => slack::parse_command(content_type, body, delivery),
            Route::Interactions => slack::parse_interaction(content_type, body, delivery),
        }
    }
}

pub async fn events(request: HttpRequest, body: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    receive(Route::Events, request, body, state).await
}

pub async fn commands(request: HttpRequest, body: web::Payload, state: web::Data<AppState>) -> HttpResponse {
    receive(Route::Commands, request, body, state).await
}

pub async fn interactions(
    request: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    receive(Route::Interactions, request, body, state).await
}

async fn receive(
    route: Route,
    request: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let started = Instant::now();
    let span = tracing::info_span!(
        "slack_request",
        route = route.name(),
        tenant.id = field::Empty,
        event.id = field::Empty,
        delivery.attempt = field::Empty,
    );
    let response = answer(route, &request, body, &state).instrument(span).await;
    state.metrics.answered(route.name(), response.status().as_u16(), started.elapsed());
    response
}

/// read (limit) → verify → parse → acknowledge; every step's failure answers at once.
async fn answer(route: Route, request: &HttpRequest, body: web::Payload, state: &AppState) -> HttpResponse {
    let body = match read_limited(request, body, state.max_body_bytes, state.body_read_timeout).await {
        Ok(body) => body,
        Err(error) => {
            tracing::info!(error = ?error, "request body refused");
            return responses::body_error(&error);
        }
    };
    let header = |name: &str| request.headers().get(name).map(|v| v.as_bytes());
    let signature = SignatureHeaders {
        timestamp: header("x-slack-request-timestamp"),
        signature: header("x-slack-signature"),
    };
    let verified = match state.verifier.verify(signature, &body, chrono::Utc::now().timestamp()) {
        Ok(verified) => verified,
        Err(rejection) => return reject(state, &rejection),
    };
    let delivery = delivery_from_headers(header("x-slack-retry-num"), header("x-slack-retry-reason"));
    let content_type = request.headers().get("content-type").and_then(|v| v.to_str().ok());
    let parsed = match route.parse(content_type, &body, delivery) {
        Ok(parsed) => parsed,
        Err(rejection) => return reject(state, &rejection),
    };

    let mut event = match parsed {
        Parsed::Event(event) => event,
        Parsed::UrlVerification { challenge } => return responses::challenge(&challenge),
        Parsed::SslCheck => return HttpResponse::Ok().finish(),
        Parsed::RateLimited { team_id, minute_rate_limited } => {
            state.metrics.rate_limited();
            tracing::warn!(
                slack.team_id = team_id.as_deref(),
                minute = minute_rate_limited,
                "Slack is rate-limiting this app's events"
            );
            return HttpResponse::Ok().finish();
        }
    };

    let span = tracing::Span::current();
    span.record("event.id", event.external_id.as_ref().map(|id| id.as_str()));
    span.record("delivery.attempt", event.delivery.attempt);
    if event.delivery.attempt > 0 {
        state.metrics.retried(event.delivery.retry_reason);
    }
    if event.external_id.is_none() {
        // Never re-sent by Slack: a second arrival of this very request is a replay.
        event.fingerprint = Some(verified.fingerprint());
    }
    let workspace = event.workspace.clone();
    let ack = state.runner.acknowledge(event).await;
    state.metrics.acknowledged(&ack);
    log_acknowledgement(&ack, &workspace, &state.refusals);
    responses::acknowledged(&ack)
}

fn reject(state: &AppState, rejection: &Rejection) -> HttpResponse {
    state.metrics.rejected(rejection.cause());
    tracing::info!(cause = rejection.cause(), "request rejected");
    responses::rejected(rejection)
}

fn log_acknowledgement(
    ack: &Acknowledgement,
    workspace: &doorman_domain::WorkspaceRef,
    refusals: &LogSummary,
) {
    let span = tracing::Span::current();
    match ack {
        Acknowledgement::Accepted { tenant, .. } => {
            span.record("tenant.id", field::display(tenant));
            tracing::debug!("accepted");
        }
        Acknowledgement::Duplicate { tenant } => {
            span.record("tenant.id", field::display(tenant));
            tracing::info!("duplicate delivery: already claimed, not dispatched again");
        }
        Acknowledgement::Replayed { tenant } => {
            span.record("tenant.id", field::display(tenant));
            tracing::warn!("replayed request: this signed request was already accepted; refused (401)");
        }
        Acknowledgement::Ignored => {
            tracing::warn!(workspace = %workspace, "no tenant has linked this workspace; ignored");
        }
        Acknowledgement::Unavailable(Unavailability::Storage(error @ StorageError::Unconfirmed(_))) => {
            tracing::warn!(error = %error, "claim not confirmed; answered 503, and it is settled after the answer");
        }
        Acknowledgement::Unavailable(why) => {
            let tenant = refused_tenant(why);
            if let Some(tenant) = tenant {
                span.record("tenant.id", field::display(tenant));
            }
            if let Some(summary) = refusals.record(why.as_str(), Instant::now()) {
                let error = match why {
                    Unavailability::Storage(error) => Some(error),
                    _ => None,
                };
                log_refusals(summary, error);
            }
        }
    }
}

/// The tenant a 503 was answered for, when one was resolved.
fn refused_tenant(why: &Unavailability) -> Option<TenantId> {
    match why {
        Unavailability::NoAgent { tenant }
        | Unavailability::Misconfigured { tenant }
        | Unavailability::Paused { tenant }
        | Unavailability::CircuitOpen { tenant }
        | Unavailability::Busy { tenant, .. } => Some(*tenant),
        Unavailability::Storage(_) | Unavailability::Internal => None,
    }
}

/// One summary line: how many deliveries were answered 503 for one reason since the last line
/// for it. Logged by an answer, the line is in that request's span (its tenant) and, for
/// storage, carries its error; logged by the once-a-second flush, it has neither.
pub fn log_refusals(summary: Summary, error: Option<&StorageError>) {
    let answers = summary.count;
    let over_ms = u64::try_from(summary.over.as_millis()).unwrap_or(u64::MAX);
    let reason = summary.key;
    match summary.key {
        "storage" => tracing::error!(
            reason,
            answers,
            over_ms,
            error = error.map(field::display),
            "database unavailable: deliveries answered 503 with nothing written"
        ),
        "storage_error" => tracing::error!(
            reason,
            answers,
            over_ms,
            error = error.map(field::display),
            "the database answered unexpectedly (a bug or a schema drift, not an outage): deliveries answered 500 with nothing written"
        ),
        "busy" => tracing::warn!(
            reason,
            answers,
            over_ms,
            "work in flight at its bound: deliveries answered 503 with nothing written"
        ),
        "internal" => tracing::error!(
            reason,
            answers,
            over_ms,
            "deciding failed (a bug): deliveries answered 503 with nothing written"
        ),
        _ => tracing::warn!(
            reason,
            answers,
            over_ms,
            "agent unavailable: deliveries answered 503 with nothing written"
        ),
    }
}

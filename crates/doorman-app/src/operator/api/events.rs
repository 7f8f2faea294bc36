//! `/admin/v1/tenants/{id}/events`: what became of events, one at a time (with each of its
//! dispatches) or listed by state, time and type; `/admin/v1/events?event_id=`: an event
//! found by its id in every tenant the key may see.

use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::usecases::operator::events::EventQuery;
use doorman_domain::{EventCursor, EventState, OperatorError};

use super::Authenticated;
use super::refusals::ReadRefusals;
use crate::documents::{EventDetailDoc, EventMatchList, EventPage};
use crate::event_detail;
use crate::operator::params::{event_path, event_search, event_type, tenant_path, unknown_event};
use crate::operator::problem::{ApiError, Problem};
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// What became of one event: handled, failed, in flight or stranded, and each of its
/// dispatches (the live one, then every replay) with when and how it ended; the request Doorman
/// sends its agent (the agent as it is now, the signature redacted); and its kept payload, for a
/// key allowed to read payloads (`payload_hidden` says why it is `null` otherwise).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/events/{event_id}",
    operation_id = "getEvent",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, pattern = "^[ -~]+$", description = "Slack's event id (Ev…)"),
    ),
    responses(
        (status = 200, description = "The event", body = EventDetailDoc),
        ReadRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn get(
    caller: Authenticated,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let (tenant, event) = path.into_inner();
    let tenant = tenant_path(&tenant)?;
    let id = event_path(&event)?;
    match event_detail::read(&state.operator, &caller.0, tenant, id).await {
        Ok(detail) => Ok(HttpResponse::Ok().json(detail)),
        Err(OperatorError::NotFound { .. }) => Err(unknown_event(&event)),
        Err(other) => Err(other.into()),
    }
}

/// The tenant's events in one state: handled (newest claim first), failed (newest failure
/// first), in flight or stranded (oldest claim first), or in every state (no `state`: newest
/// claim first); with how many there are in all
/// (`total`, exact up to 1,000, else `total_is_lower_bound`).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/events",
    operation_id = "listEvents",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("state" = Option<crate::documents::words::EventStatus>, Query, description = "Which events: handled (newest claim first), failed (newest failure first), in_flight or stranded (oldest claim first); left out, every event whatever its state (newest claim first)"),
        ("since" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: at or after this (the last failure's time for `failed`, the claim's otherwise)"),
        ("until" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: before this, likewise"),
        ("type" = Option<String>, Query, min_length = 1, max_length = 255, pattern = "^[a-z0-9]+([_.][a-z0-9]+)*$", description = "Only events of this type: Slack's, lower-case words joined by `_` or `.` (`app_mention`, `message`, …)"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page (50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of events", body = EventPage),
        ReadRefusals,
        (status = 422, description = "An unknown state, or a refused since, until, type, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    caller: Authenticated,
    path: web::Path<String>,
    request: HttpRequest,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let query = Query::of(&request);
    // No state: every event, whatever became of it, newest claim first.
    let which = query
        .get("state")
        .map(|word| EventState::parse(word).map_err(|e| ApiError::invalid_value("state", &e)))
        .transpose()?;
    let filter = EventQuery {
        since: query.instant("since")?,
        until: query.instant("until")?,
        event_type: event_type(query.get("type"))?,
    };
    let page = query.page::<EventCursor>()?;
    let listed = state.operator.events(&caller.0, Some(tenant), which, filter.clone(), &page).await?;
    let total = state.operator.events_total(&caller.0, Some(tenant), which, filter).await?;
    Ok(HttpResponse::Ok().json(EventPage::of(listed, total)))
}

/// The events numbered `event_id`, in every tenant the key may see (a scoped key: its own),
/// each with its tenant and what became of it: support knows an event's id before its
/// tenant. The id is matched whole (an id is tenant-local, so two tenants may each have one);
/// none found is an empty list.
#[utoipa::path(
    get,
    path = "/admin/v1/events",
    operation_id = "findEvents",
    tag = "events",
    params(
        ("event_id" = String, Query, min_length = 1, max_length = 255, pattern = "^[ -~]+$", description = "Slack's event id, whole (Ev…)"),
    ),
    responses(
        (status = 200, description = "The events found, by tenant name", body = EventMatchList),
        (status = 401, description = "No valid key (`WWW-Authenticate: Bearer`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A missing event_id, or one that is empty, over 255 bytes or not printable ASCII", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn find(
    caller: Authenticated,
    request: HttpRequest,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let found = match event_search(Query::of(&request).get("event_id"))? {
        Some(id) => state.operator.find_events(&caller.0, &id).await?,
        None => Vec::new(),
    };
    Ok(HttpResponse::Ok().json(found.into_iter().collect::<EventMatchList>()))
}

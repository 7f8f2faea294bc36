//! `/admin/v1/tenants/{id}/events` and `/replays`: what became of events, and sending kept
//! ones again (the same rules and outcomes as `doorman receipts replay`).

use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::{EventCursor, EventState, ExternalEventId, OperatorError, ReplaySelection, TenantId};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

use super::problem::{ApiError, BodyRefusals, Problem, ReadRefusals, malformed};
use super::query::{Query, instant};
use super::{AdminState, Authenticated, tenant_path};
use crate::documents::{EventDoc, Page, ReplayReport};

/// One event's replay.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ReplayOne {
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

/// Which of the tenant's events to replay: `failed_since` or `stranded`, not both.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReplayMany {
    /// Every unhandled event whose dispatch failed at or after this instant (RFC 3339).
    #[schema(format = DateTime)]
    pub failed_since: Option<String>,
    /// Every stranded event (acknowledged over 10 minutes ago, never handled, no failure).
    pub stranded: Option<bool>,
    #[serde(default)]
    pub dry_run: bool,
}

fn event_path(raw: &str) -> Result<ExternalEventId, ApiError> {
    ExternalEventId::new(raw).map_err(|_| unknown_event(raw))
}

/// 404 for an event with no receipt, with `event_status: unknown` as `receipts show` says it.
fn unknown_event(id: &str) -> ApiError {
    let mut error = ApiError::not_found(format!(
        "no receipt for event {id}: never received, pruned after the retention, or from a workspace no tenant had linked"
    ));
    error.0.event_status = Some("unknown".into());
    error
}

/// What became of one event: handled, failed, in flight or stranded.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/events/{event_id}",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, pattern = "^[ -~]+$", description = "Slack's event id (Ev…)"),
    ),
    responses(
        (status = 200, description = "The event", body = EventDoc),
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
    match state.operator.event(&caller.0, tenant, id).await {
        Ok(report) => Ok(HttpResponse::Ok().json(EventDoc::from(report))),
        Err(OperatorError::NotFound { .. }) => Err(unknown_event(&event)),
        Err(other) => Err(other.into()),
    }
}

/// The tenant's failed events (newest failure first) or stranded ones (oldest first).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/events",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("state" = String, Query, pattern = "^(failed|stranded)$", description = "`failed` (newest failure first) or `stranded` (oldest first)"),
        ("since" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: failed (or, stranded: claimed) at or after this"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page (50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of events", body = Page<EventDoc>),
        ReadRefusals,
        (status = 422, description = "A missing or unknown state, or a refused since, limit or cursor", body = Problem, content_type = "application/problem+json"),
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
    let which =
        query.get("state").ok_or_else(|| ApiError::invalid("state", "is required: failed or stranded"))?;
    let which = EventState::parse(which).map_err(|e| ApiError::invalid_value("state", &e))?;
    let since = query.instant("since")?;
    let page = query.page::<EventCursor>()?;
    let listed = state.operator.events(&caller.0, Some(tenant), which, since, &page).await?;
    Ok(HttpResponse::Ok().json(Page::<EventDoc>::of(listed)))
}

/// Sends one kept event to the tenant's agent again (same `webhook-id`, `delivery.replay`).
/// Handled events and events without a kept payload are refused, in the report. The body is
/// optional.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/events/{event_id}/replay",
    tag = "events",
    request_body(content = Option<ReplayOne>, description = "Optional: `{\"dry_run\": true}`"),
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, pattern = "^[ -~]+$", description = "Slack's event id (Ev…)"),
    ),
    responses(
        (status = 200, description = "What the replay did (`outcome` per event)", body = ReplayReport),
        BodyRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn replay_one(
    caller: Authenticated,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let (tenant, event) = path.into_inner();
    let tenant = tenant_path(&tenant)?;
    let options: ReplayOne = optional_json(&body)?.unwrap_or_default();
    let selection = ReplaySelection::Event(event_path(&event)?);
    replay(&caller, &state, tenant, &selection, options.dry_run).await
}

/// Sends the tenant's failed (since an instant) or stranded kept events to its agent again,
/// one at a time, and reports what became of each.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/replays",
    tag = "events",
    request_body = ReplayMany,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "What the replay did (`outcome` per event)", body = ReplayReport),
        BodyRefusals,
        (status = 422, description = "Neither or both of failed_since and stranded, or a refused instant", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn replay_many(
    caller: Authenticated,
    path: web::Path<String>,
    body: web::Json<ReplayMany>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let body = body.into_inner();
    let selection = match (body.failed_since.as_deref(), body.stranded.unwrap_or(false)) {
        (Some(since), false) => ReplaySelection::FailedSince(instant("failed_since", since)?),
        (None, true) => ReplaySelection::StrandedBefore(state.operator.stranded_before()),
        _ => {
            return Err(ApiError::invalid("failed_since", "give failed_since, or stranded: true (not both)"));
        }
    };
    replay(&caller, &state, tenant, &selection, body.dry_run).await
}

async fn replay(
    caller: &Authenticated,
    state: &AdminState,
    tenant: TenantId,
    selection: &ReplaySelection,
    dry_run: bool,
) -> Result<HttpResponse, ApiError> {
    let report = state.replays.run(&state.operator, &caller.0, tenant, selection, dry_run).await?;
    Ok(HttpResponse::Ok().json(ReplayReport::new(tenant, dry_run, &report)))
}

/// A body that may be absent; when present it must be JSON (whatever the content type says,
/// since there may be none).
fn optional_json<T: DeserializeOwned>(body: &[u8]) -> Result<Option<T>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(body).map(Some).map_err(|e| malformed(&e))
}

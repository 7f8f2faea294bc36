//! `/admin/v1/tenants/{id}/replays` and `…/events/{event_id}/replay`: sending kept events
//! again, as jobs (the same rules and outcomes as `doorman receipts replay`). A replay answers
//! 202 with its job at once; an admin process sends its events one at a time; `GET` the job
//! for its progress and each event's outcome. A dry run answers what would be sent, at once.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::usecases::operator::events::EventQuery;
use doorman_domain::{
    EventState, ExternalEventId, JobCursor, MAX_REPLAY_EVENTS, ReplayJobId, ReplaySelection,
    SelectionRefused, TenantId,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::body::malformed;
use super::documents::ReplayJobPage;
use super::refusals::{BodyRefusals, ReadRefusals};
use crate::documents::{ReplayJobDoc, ReplayReport};
use crate::operator::params::{event_path, event_type, tenant_path};
use crate::operator::problem::{ApiError, Problem};
use crate::operator::query::{Query, instant};
use crate::operator::state::AdminState;

/// One event's replay.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayOne {
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

/// Which of the tenant's events to replay: those whose dispatch failed since an instant, the
/// stranded ones, events chosen by id, or the events a listing's filter shows. One shape
/// only: a body mixing two is not of any.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ReplayMany {
    FailedSince(ReplayFailed),
    Stranded(ReplayStranded),
    Chosen(ReplayChosen),
    Matching(ReplayMatching),
}

/// Events chosen by id (a selection in a list): each is in the job, and one without a
/// receipt ends `unknown`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayChosen {
    /// 1 to 1,000 of Slack's event ids (a repeated one counts once).
    #[schema(min_items = 1, max_items = 1000, value_type = Vec<EventIdText>)]
    pub event_ids: Vec<String>,
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

/// Slack's event id (Ev…), as the OpenAPI document declares it: 1 to 255 printable ASCII
/// characters.
#[derive(ToSchema)]
#[schema(pattern = "^[ -~]{1,255}$")]
#[allow(dead_code)] // A schema only: the ids are read as strings and checked as event ids.
pub struct EventIdText(String);

/// The events `GET /tenants/{id}/events` lists with the same filter (failed or stranded),
/// the first `limit` in claim order.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayMatching {
    pub filter: ReplayFilter,
    /// At most this many (1 to 1,000; 1,000 when left out).
    #[schema(minimum = 1, maximum = 1000, value_type = Option<u32>)]
    #[serde(default, deserialize_with = "super::numbers::optional_whole")]
    pub limit: Option<u64>,
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

/// The listing's filter, as `GET /tenants/{id}/events` takes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayFilter {
    /// `failed` or `stranded` (a handled event is never sent again; an in-flight one is being
    /// sent).
    #[schema(pattern = "^(failed|stranded)$")]
    pub state: String,
    /// Only events of this type: Slack's, lower-case words joined by `_` or `.`
    /// (`app_mention`, `message`, …).
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 255, pattern = "^[a-z0-9]+([_.][a-z0-9]+)*$")]
    pub event_type: Option<String>,
    /// RFC 3339: at or after (the last failure's time for failed events, the claim's for
    /// stranded ones).
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    pub since: Option<String>,
    /// RFC 3339: before, likewise.
    #[schema(value_type = Option<chrono::DateTime<chrono::Utc>>)]
    pub until: Option<String>,
}

/// The tenant's unhandled events whose dispatch failed at or after an instant.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayFailed {
    /// RFC 3339. Read as text and parsed here, so that one that is not an instant is refused
    /// naming the field (422), as a query's instants are.
    #[schema(value_type = chrono::DateTime<chrono::Utc>)]
    pub failed_since: String,
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

/// The tenant's stranded events (acknowledged over 10 minutes ago, never handled, no failure).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayStranded {
    /// Always `true`.
    #[schema(schema_with = always_true)]
    #[serde(deserialize_with = "only_true")]
    pub stranded: bool,
    /// Say what would be sent; send and change nothing (a read-only key may).
    #[serde(default)]
    pub dry_run: bool,
}

fn always_true() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}

fn only_true<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    match bool::deserialize(deserializer)? {
        true => Ok(true),
        false => Err(serde::de::Error::custom("`stranded` is always true")),
    }
}

fn job_path(raw: &str) -> Result<ReplayJobId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found(format!("no replay job with id {raw:?}")))
}

/// Sends one kept event to the tenant's agent again (same `webhook-id`, `delivery.replay`),
/// as a job of one event. A handled event, or one without a kept payload, is refused in the
/// job's outcome. The body is optional.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/events/{event_id}/replay",
    operation_id = "replayEvent",
    tag = "replays",
    request_body(content = Option<ReplayOne>, description = "Optional (leave it out, or `{\"dry_run\": true}`)"),
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("event_id" = String, Path, min_length = 1, max_length = 255, pattern = "^[ -~]+$", description = "Slack's event id (Ev…)"),
    ),
    responses(
        (status = 202, description = "The replay job, queued", body = ReplayJobDoc,
         headers(("Location" = String, description = "The job's URL"))),
        (status = 200, description = "A dry run: what a replay would do", body = ReplayReport),
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
/// as a job: one at a time, each event's outcome recorded (and audited) as it comes.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/replays",
    operation_id = "replayEvents",
    tag = "replays",
    request_body = ReplayMany,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 202, description = "The replay job, queued", body = ReplayJobDoc,
         headers(("Location" = String, description = "The job's URL"))),
        (status = 200, description = "A dry run: what a replay would do", body = ReplayReport),
        BodyRefusals,
        (status = 422, description = "A failed_since, since or until that is not an RFC 3339 instant, an event id that is not one, none or over 1,000 of them, a state other than failed or stranded, or a limit out of 1 to 1,000", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn replay_many(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<ReplayMany>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let (selection, dry_run) = match body.into_inner() {
        ReplayMany::FailedSince(failed) => {
            (ReplaySelection::FailedSince(instant("failed_since", &failed.failed_since)?), failed.dry_run)
        }
        ReplayMany::Stranded(ReplayStranded { stranded, dry_run }) => {
            debug_assert!(stranded, "only `true` deserializes");
            (ReplaySelection::StrandedBefore(state.operator.stranded_before()), dry_run)
        }
        ReplayMany::Chosen(ReplayChosen { event_ids, dry_run }) => {
            // `.` and `..` are well-formed but name no stored event (as in the search): left
            // out, so a list of only those selects nothing.
            let named: Vec<&String> =
                event_ids.iter().filter(|raw| !matches!(raw.as_str(), "." | "..")).collect();
            let ids = named
                .iter()
                .map(|raw| {
                    ExternalEventId::new(raw.as_str()).map_err(|e| ApiError::invalid_value("event_ids", &e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let selection = if ids.is_empty() && !event_ids.is_empty() {
                ReplaySelection::Chosen(Vec::new())
            } else {
                ReplaySelection::chosen(ids).map_err(|e| ApiError::invalid("event_ids", e))?
            };
            (selection, dry_run)
        }
        ReplayMany::Matching(ReplayMatching { filter, limit, dry_run }) => {
            let which = EventState::parse(&filter.state).map_err(|e| ApiError::invalid_value("state", &e))?;
            let query = EventQuery {
                since: filter.since.as_deref().map(|raw| instant("since", raw)).transpose()?,
                until: filter.until.as_deref().map(|raw| instant("until", raw)).transpose()?,
                event_type: event_type(filter.event_type.as_deref())?,
            };
            let selection = state
                .operator
                .replay_matching(
                    which,
                    query,
                    limit.map_or(MAX_REPLAY_EVENTS, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                )
                .map_err(|refused| match refused {
                    SelectionRefused::Limit => ApiError::invalid("limit", refused),
                    other => ApiError::invalid("state", other),
                })?;
            (selection, dry_run)
        }
    };
    replay(&caller, &state, tenant, &selection, dry_run).await
}

async fn replay(
    caller: &Authenticated,
    state: &AdminState,
    tenant: TenantId,
    selection: &ReplaySelection,
    dry_run: bool,
) -> Result<HttpResponse, ApiError> {
    if dry_run {
        let report = state.replays.dry_run(&state.operator, &caller.0, tenant, selection).await?;
        return Ok(HttpResponse::Ok().json(ReplayReport::new(tenant, true, &report)));
    }
    let job = ReplayJobDoc::from(state.replays.start(&state.operator, &caller.0, tenant, selection).await?);
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, format!("/admin/v1/tenants/{tenant}/replays/{}", job.id)))
        .json(job))
}

/// The tenant's replay jobs, newest first (without their events).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/replays",
    operation_id = "listReplayJobs",
    tag = "replays",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page (50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of jobs", body = ReplayJobPage),
        ReadRefusals,
        (status = 422, description = "A refused limit or cursor", body = Problem, content_type = "application/problem+json"),
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
    let page = Query::of(&request).page::<JobCursor>()?;
    let listed = state.operator.replay_jobs(&caller.0, tenant, &page).await?;
    Ok(HttpResponse::Ok().json(ReplayJobPage::of(listed)))
}

/// A replay job: its progress and each event's outcome so far.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/replays/{job_id}",
    operation_id = "getReplayJob",
    tag = "replays",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("job_id" = uuid::Uuid, Path, description = "The job's id"),
    ),
    responses(
        (status = 200, description = "The job", body = ReplayJobDoc),
        ReadRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn get(
    caller: Authenticated,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let (tenant, job) = path.into_inner();
    let (tenant, job) = (tenant_path(&tenant)?, job_path(&job)?);
    Ok(HttpResponse::Ok().json(ReplayJobDoc::from(state.operator.replay_job(&caller.0, tenant, job).await?)))
}

/// A body that may be left out; when present it must be a JSON object (whatever the content
/// type says, since there may be none), as the document says: `null` is not one.
fn optional_json<T: DeserializeOwned>(body: &[u8]) -> Result<Option<T>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<serde_json::Value>(body).map_err(|e| malformed(&e))? {
        object @ serde_json::Value::Object(_) => {
            serde_json::from_value(object).map(Some).map_err(|e| malformed(&e))
        }
        _ => Err(ApiError::bad_request("the body must be a JSON object, or left out")),
    }
}

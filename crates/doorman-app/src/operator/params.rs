//! What a request names in its path, query or form, read the same way by the API and the
//! console: a tenant, a workspace, an event, an event type. An id that could not name anything
//! is a 404, as an unknown one is; a malformed filter is a 422 naming it.

use doorman_domain::{EventType, ExternalEventId, TenantId, WorkspaceId};

use super::problem::ApiError;

/// A tenant id from a path: one that is not a UUID names no tenant (404).
pub fn tenant_path(raw: &str) -> Result<TenantId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found(format!("no tenant with id {raw:?}")))
}

/// A workspace id from a path: one that could not be stored names nothing (404).
pub fn workspace_path(raw: &str) -> Result<WorkspaceId, ApiError> {
    WorkspaceId::new(raw).map_err(|_| ApiError::not_found("no such workspace"))
}

/// An event id from a path: one that could not be stored names no receipt (404).
pub fn event_path(raw: &str) -> Result<ExternalEventId, ApiError> {
    ExternalEventId::new(raw).map_err(|_| unknown_event(raw))
}

/// `event_id` of a search: whole, as the platform wrote it. Missing, empty, longer than 255
/// bytes or not printable ASCII is a 422 naming it; `.` and `..` are well-formed but no event
/// is stored under them (`None`: nothing to look for, an empty answer).
pub fn event_search(raw: Option<&str>) -> Result<Option<ExternalEventId>, ApiError> {
    let raw =
        raw.ok_or_else(|| ApiError::invalid("event_id", "is required: Slack's event id, like Ev0123ABCD"))?;
    match ExternalEventId::new(raw) {
        Ok(id) => Ok(Some(id)),
        Err(_) if raw == "." || raw == ".." => Ok(None),
        Err(e) => Err(ApiError::invalid_value("event_id", &e)),
    }
}

/// 404 for an event with no receipt, with `event_status: unknown` as `receipts show` says it.
pub fn unknown_event(id: &str) -> ApiError {
    let mut error = ApiError::not_found(format!(
        "no receipt for event {id}: never received, pruned after the retention, or from a workspace no tenant had linked"
    ));
    error.0.event_status = Some("unknown".into());
    error
}

/// `type`: the event type to list only, as Slack writes event types.
pub fn event_type(raw: Option<&str>) -> Result<Option<EventType>, ApiError> {
    raw.map(EventType::new).transpose().map_err(|e| ApiError::invalid_value("type", &e))
}

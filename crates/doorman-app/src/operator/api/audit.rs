//! `/admin/v1/audit`: every change through either face, newest first.

use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::{AuditAction, AuditCursor, AuditFilter};

use super::Authenticated;
use super::refusals::ReadRefusals;
use crate::documents::AuditPage;
use crate::operator::params::tenant_path;
use crate::operator::problem::{ApiError, Problem};
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// Audit entries: who (key id and name, or `cli` and the OS user), what, on which tenant, in
/// which request. A key scoped to a tenant reads that tenant's entries only; a key for every
/// tenant may name a deleted tenant, whose entries the trail keeps. `action`, `key`, `since` and
/// `until` narrow the listing further, each alone or together, with the same pagination.
#[utoipa::path(
    get,
    path = "/admin/v1/audit",
    operation_id = "listAuditEntries",
    tag = "audit",
    params(
        ("tenant" = Option<uuid::Uuid>, Query, description = "One tenant's entries"),
        ("action" = Option<crate::documents::words::AuditAction>, Query, description = "Only entries of this action"),
        ("key" = Option<uuid::Uuid>, Query, description = "Only entries made with this key (its id)"),
        ("since" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: at or after this"),
        ("until" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "RFC 3339: before this; not before `since`"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page (50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of entries", body = AuditPage),
        ReadRefusals,
        (status = 422, description = "An unknown action, a refused key, since, until (before since), limit or cursor", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    caller: Authenticated,
    request: HttpRequest,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let query = Query::of(&request);
    let tenant = query.get("tenant").map(tenant_path).transpose()?;
    let filter = filter(&query)?;
    let page = query.page::<AuditCursor>()?;
    let listed = state.operator.audit(&caller.0, tenant, &filter, &page).await?;
    Ok(HttpResponse::Ok().json(AuditPage::of(listed)))
}

/// `action` (a word of the trail's vocabulary), `key` (a key's id), `since` and `until`.
fn filter(query: &Query) -> Result<AuditFilter, ApiError> {
    let action = query
        .get("action")
        .map(|word| AuditAction::parse(word).map_err(|e| ApiError::invalid_value("action", &e)))
        .transpose()?;
    let key = query
        .get("key")
        .map(|id| id.parse().map_err(|_| ApiError::invalid("key", "must be a key's id (a UUID)")))
        .transpose()?;
    Ok(AuditFilter { action, key, since: query.instant("since")?, until: query.instant("until")? })
}

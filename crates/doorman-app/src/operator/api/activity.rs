//! `/admin/v1/tenants/{id}/activity`: a tenant's dispatches by hour over the last day or week;
//! `/admin/v1/overview`: the tenants failing most, those with the most stranded events and the
//! agents failing now (issue 42). Activity and failures are read from the rollup the serving
//! processes keep; stranded events from the receipts their sweep marked (a partial index).

use actix_web::{HttpRequest, HttpResponse, web};

use super::Authenticated;
use super::refusals::{AcrossTenantsRefusals, ReadRefusals};
use crate::documents::{ActivityDoc, OverviewDoc};
use crate::operator::params::tenant_path;
use crate::operator::problem::{ApiError, Problem};
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// The longest window a tenant's activity is read over, in hours: a week (the rollup keeps a
/// day more).
pub const MOST_HOURS: u32 = 168;

/// The tenant's dispatches by hour over the last `hours` (1 to 168; 24 when left out), oldest
/// first, every hour there, counted by the serving processes as each dispatch ended (a
/// process's last ten seconds or so arrive with its next flush).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/activity",
    operation_id = "getActivity",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("hours" = Option<u32>, Query, minimum = 1, maximum = 168, description = "How many hours, the current one included: 24 (the last day) by default, at most 168 (the last week)"),
    ),
    responses(
        (status = 200, description = "The tenant's activity", body = ActivityDoc),
        ReadRefusals,
        (status = 422, description = "hours that is not a whole number from 1 to 168", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    caller: Authenticated,
    path: web::Path<String>,
    request: HttpRequest,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let hours = window(Query::of(&request).get("hours"))?;
    let activity = state.operator.activity(&caller.0, tenant, hours).await?;
    Ok(HttpResponse::Ok().json(ActivityDoc::of(*tenant.as_uuid(), &activity)))
}

/// `hours` as asked: 1 to [`MOST_HOURS`], a day when left out.
pub fn window(raw: Option<&str>) -> Result<u32, ApiError> {
    match raw {
        None => Ok(24),
        Some(raw) => raw.parse().ok().filter(|hours| (1..=MOST_HOURS).contains(hours)).ok_or_else(|| {
            ApiError::invalid("hours", "must be a whole number of hours from 1 to 168 (a week)")
        }),
    }
}

/// What is going wrong now across tenants: the tenants with the most failed dispatches in the
/// last 24 hours, the tenants with the most stranded events now (as the serving processes'
/// sweep marked them, once a minute), and the agents failing (a circuit open) or disabled now.
/// For a key for every tenant: a key scoped to one is refused (403).
#[utoipa::path(
    get,
    path = "/admin/v1/overview",
    operation_id = "getOverview",
    tag = "events",
    responses(
        (status = 200, description = "The overview", body = OverviewDoc),
        AcrossTenantsRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn overview(caller: Authenticated, state: web::Data<AdminState>) -> Result<HttpResponse, ApiError> {
    let overview = state.operator.overview(&caller.0).await?;
    Ok(HttpResponse::Ok().json(OverviewDoc::from(overview)))
}

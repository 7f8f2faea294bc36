//! `/admin/v1/tenants/{id}/install-links` and `/installations`: the Slack app installed by a
//! tenant's customers through a link.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use doorman_domain::usecases::operator::installs::LinkLifetime;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::documents::InstallationList;
use super::refusals::{BodyRefusals, ChangeRefusals, ReadRefusals};
use crate::documents::InstallLinkDoc;
use crate::operator::params::{tenant_path, workspace_path};
use crate::operator::problem::{ApiError, Problem};
use crate::operator::state::AdminState;

/// An install link to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInstallLink {
    /// How long the link may be used: 60 seconds to 30 days (86,400 unless given).
    #[schema(minimum = 60, maximum = 2_592_000, example = 86_400)]
    #[serde(default, deserialize_with = "super::numbers::optional_whole")]
    pub expires_in_seconds: Option<u64>,
}

/// A link to hand one customer: their browser goes through Slack's consent, and the workspace
/// they install into is linked to the tenant. Usable for several installs until it expires.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/install-links",
    operation_id = "createInstallLink",
    tag = "installations",
    request_body = NewInstallLink,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 201, description = "The link", body = InstallLinkDoc,
         headers(("Location" = String, description = "The link itself (its `url`)"))),
        BodyRefusals,
        (status = 409, description = "Installs are off (the Slack app is not configured)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A lifetime out of bounds", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create_link(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<NewInstallLink>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let seconds = body.expires_in_seconds.unwrap_or(24 * 3600);
    let lifetime = LinkLifetime::new(Duration::from_secs(seconds))
        .map_err(|e| ApiError::invalid_value("expires_in_seconds", &e))?;
    let link = InstallLinkDoc::from(state.operator.create_install_link(&caller.0, tenant, lifetime).await?);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, link.url.clone())).json(link))
}

/// The tenant's installations: never a token.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/installations",
    operation_id = "listInstallations",
    tag = "installations",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The tenant's installations", body = InstallationList),
        ReadRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn list(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let found = state.operator.installations(&caller.0, Some(tenant)).await?;
    Ok(HttpResponse::Ok().json(found.into_iter().collect::<InstallationList>()))
}

/// Removes the tenant's installation of the workspace (team id, or an org-wide install's
/// enterprise id) and the workspace's link, as Slack's `app_uninstalled` does.
#[utoipa::path(
    delete,
    path = "/admin/v1/tenants/{id}/installations/{workspace_id}",
    operation_id = "removeInstallation",
    tag = "installations",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("workspace_id" = String, Path, min_length = 1, max_length = 255, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$", description = "A team id, or an org-wide install's enterprise id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        ChangeRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn remove(
    caller: Authenticated,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let (tenant, workspace) = path.into_inner();
    let (tenant, workspace) = (tenant_path(&tenant)?, workspace_path(&workspace)?);
    state.operator.uninstall(&caller.0, tenant, &workspace).await?;
    Ok(HttpResponse::NoContent().finish())
}

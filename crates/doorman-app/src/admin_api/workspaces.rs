//! `/admin/v1/tenants/{id}/workspaces`: which Slack workspaces a tenant's deliveries come from.

use actix_web::{HttpResponse, web};
use doorman_domain::WorkspaceId;
use serde::Deserialize;
use utoipa::ToSchema;

use super::problem::{ApiError, BodyRefusals, ChangeRefusals, Problem, ReadRefusals};
use super::{AdminState, Authenticated, tenant_path, workspace_path};
use crate::documents::{Items, WorkspaceDoc};

/// A workspace to link: a team (`team_id`, with its `enterprise_id` inside a grid), or an
/// org-wide install (`enterprise_id` alone).
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewWorkspace {
    #[schema(min_length = 1, max_length = 255, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    pub team_id: Option<String>,
    #[schema(min_length = 1, max_length = 255, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    pub enterprise_id: Option<String>,
}

/// The tenant's workspace links, oldest first.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/workspaces",
    tag = "workspaces",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The tenant's links", body = Items<WorkspaceDoc>),
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
    let links = state.operator.workspaces(&caller.0, tenant).await?;
    Ok(HttpResponse::Ok().json(Items { items: links.into_iter().map(WorkspaceDoc::from).collect() }))
}

/// Links a workspace to the tenant: its events are then the tenant's. A workspace belongs to
/// one tenant: one linked elsewhere is refused (409); linking one the tenant has is a no-op
/// (200).
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/workspaces",
    tag = "workspaces",
    request_body = NewWorkspace,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 201, description = "Linked", body = WorkspaceDoc),
        (status = 200, description = "Already linked to this tenant", body = WorkspaceDoc),
        BodyRefusals,
        (status = 409, description = "Linked to another tenant", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Neither id, or one that is not valid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn link(
    caller: Authenticated,
    path: web::Path<String>,
    body: web::Json<NewWorkspace>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let body = body.into_inner();
    let id = |field: &str, raw: Option<String>| {
        raw.map(WorkspaceId::new).transpose().map_err(|e| ApiError::invalid_value(field, &e))
    };
    let (team, enterprise) = (id("team_id", body.team_id)?, id("enterprise_id", body.enterprise_id)?);
    if team.is_none() && enterprise.is_none() {
        return Err(ApiError::invalid(
            "team_id",
            "give team_id, enterprise_id (an org-wide install), or both",
        ));
    }
    let linked = state.operator.link_workspace(&caller.0, tenant, team, enterprise).await?;
    let doc = WorkspaceDoc::from(linked.link);
    Ok(if linked.new { HttpResponse::Created().json(doc) } else { HttpResponse::Ok().json(doc) })
}

/// Unlinks the workspace named by its team id (or an org-wide install's enterprise id), and
/// removes the app's installation there, if any.
#[utoipa::path(
    delete,
    path = "/admin/v1/tenants/{id}/workspaces/{workspace_id}",
    tag = "workspaces",
    params(
        ("id" = uuid::Uuid, Path, description = "The tenant's id"),
        ("workspace_id" = String, Path, min_length = 1, max_length = 255, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$", description = "A team id, or an org-wide install's enterprise id"),
    ),
    responses(
        (status = 204, description = "Unlinked"),
        ChangeRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn unlink(
    caller: Authenticated,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let (tenant, workspace) = path.into_inner();
    let (tenant, workspace) = (tenant_path(&tenant)?, workspace_path(&workspace)?);
    state.operator.unlink_workspace(&caller.0, tenant, &workspace).await?;
    Ok(HttpResponse::NoContent().finish())
}

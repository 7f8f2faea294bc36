//! `/admin/v1/tenants/{id}/workspaces`: which Slack workspaces a tenant's deliveries come from.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use doorman_domain::WorkspaceId;
use serde::Deserialize;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::refusals::{BodyRefusals, ChangeRefusals, ReadRefusals};
use crate::documents::{WorkspaceDoc, WorkspaceList};
use crate::operator::params::{tenant_path, workspace_path};
use crate::operator::problem::{ApiError, Problem};
use crate::operator::state::AdminState;

/// A workspace to link: a team (`team_id`, with its `enterprise_id` inside a grid), or an
/// org-wide install (`enterprise_id` alone). Slack's ids: `T…` and `E…`, upper-case letters
/// and digits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewWorkspace {
    pub team_id: Option<String>,
    pub enterprise_id: Option<String>,
}

/// Written by hand: at least one of the two ids (a rule derived schemas cannot say), each in
/// Slack's form, which the use case also checks.
impl utoipa::PartialSchema for NewWorkspace {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ObjectBuilder, Type};
        let id = |letter: char, example: &str, description: &str, nullable: bool| {
            let kind = if nullable {
                utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])
            } else {
                utoipa::openapi::schema::SchemaType::new(Type::String)
            };
            ObjectBuilder::new()
                .schema_type(kind)
                .pattern(Some(format!("^{letter}[A-Z0-9]{{1,31}}$")))
                .examples([serde_json::json!(example)])
                .description(Some(description))
        };
        let team = "A Slack team id (T…); with `enterprise_id`, a team inside that Enterprise Grid.";
        let enterprise = "A Slack enterprise id (E…); alone, an org-wide install.";
        let fields = ObjectBuilder::new()
            .property("team_id", id('T', "T0123ABCD", team, true))
            .property("enterprise_id", id('E', "E0123ABCD", enterprise, true))
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        let one_of_them = |name: &str, letter: char, example: &str, description: &str| {
            ObjectBuilder::new().property(name, id(letter, example, description, false)).required(name)
        };
        AllOfBuilder::new()
            .item(fields)
            .item(
                AnyOfBuilder::new()
                    .item(one_of_them("team_id", 'T', "T0123ABCD", team))
                    .item(one_of_them("enterprise_id", 'E', "E0123ABCD", enterprise)),
            )
            .description(Some(
                "A workspace to link: a team (`team_id`, with its `enterprise_id` inside a grid), or an org-wide install (`enterprise_id` alone).",
            ))
            .into()
    }
}

impl ToSchema for NewWorkspace {}

/// The tenant's workspace links, oldest first.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/workspaces",
    operation_id = "listWorkspaces",
    tag = "workspaces",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The tenant's links", body = WorkspaceList),
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
    Ok(HttpResponse::Ok().json(links.into_iter().collect::<WorkspaceList>()))
}

/// Links a workspace to the tenant: its events are then the tenant's. A workspace belongs to
/// one tenant: one linked elsewhere is refused (409); linking one the tenant has is a no-op
/// (200).
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/workspaces",
    operation_id = "linkWorkspace",
    tag = "workspaces",
    request_body = NewWorkspace,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 201, description = "Linked", body = WorkspaceDoc,
         headers(("Location" = String, description = "The link's URL (by its team id, or an org-wide install's enterprise id), which unlinks it"))),
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
    body: Object<NewWorkspace>,
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
    if !linked.new {
        return Ok(HttpResponse::Ok().json(WorkspaceDoc::from(linked.link)));
    }
    let name = linked.link.workspace.name().map(|id| id.to_string()).unwrap_or_default();
    let location = format!("/admin/v1/tenants/{tenant}/workspaces/{name}");
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .json(WorkspaceDoc::from(linked.link)))
}

/// Unlinks the workspace named by its team id (or an org-wide install's enterprise id), and
/// removes the app's installation there, if any.
#[utoipa::path(
    delete,
    path = "/admin/v1/tenants/{id}/workspaces/{workspace_id}",
    operation_id = "unlinkWorkspace",
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

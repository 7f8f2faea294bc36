//! `/admin/v1/tenants`: create (idempotently), list, read; keeping payloads for replay;
//! redelivery; whether read-only portals read payloads.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::{IdempotencyKey, RedeliverySchedule, TenantCursor, TenantName, TenantSearch};
use serde::Deserialize;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::documents::{ReadOnlyPortalsReadPayloadsDoc, RedeliverySettingDoc, RetainPayloadsDoc};
use super::refusals::{BodyRefusals, ChangeRefusals, ReadRefusals};
use crate::documents::{OffboardedDoc, TenantDoc, TenantPage};
use crate::operator::params::tenant_path;
use crate::operator::problem::{ApiError, Problem};
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// A tenant's new name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantChange {
    /// 1 to 200 characters, no control characters; trimmed.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
}

/// A tenant to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    /// 1 to 200 characters, no control characters; trimmed.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
}

/// Creates a tenant. Only a key for every tenant, and not read-only, may. With an
/// `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header), the same request again
/// answers what the first did (the same tenant: nothing created); the same key with a different
/// body is refused (422, `idempotency-key-reused`), and any request under the key while the
/// first is still being processed too (409, `idempotency-key-in-use`: send it again shortly).
#[utoipa::path(
    post,
    path = "/admin/v1/tenants",
    operation_id = "createTenant",
    tag = "tenants",
    request_body = NewTenant,
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]([ -~]*[!-~])?$",
             description = "Makes the creation safe to repeat (24 hours): 1 to 255 printable ASCII characters")),
    responses(
        (status = 201, description = "Created (or, for a repeat under the same Idempotency-Key, created before)", body = TenantDoc,
         headers(("Location" = String, description = "The tenant's URL"))),
        BodyRefusals,
        (status = 409, description = "A request with this Idempotency-Key is still being processed (`idempotency-key-in-use`): send it again shortly", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A refused name, or an Idempotency-Key used before for a different request (`idempotency-key-reused`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    caller: Authenticated,
    request: HttpRequest,
    body: Object<NewTenant>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let name = TenantName::new(body.into_inner().name).map_err(|e| ApiError::invalid_value("name", &e))?;
    let idempotency = request
        .headers()
        .get("idempotency-key")
        .map(|v| v.to_str().map_err(|_| ()).and_then(|v| IdempotencyKey::new(v).map_err(|_| ())))
        .transpose()
        .map_err(|()| ApiError::invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters"))?;
    let created = state.operator.create_tenant(&caller.0, name, idempotency).await?;
    let doc = TenantDoc::from(created.tenant);
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/admin/v1/tenants/{}", doc.id)))
        .json(doc))
}

/// The tenants this key may see, oldest first: every tenant, or a scoped key's own; with
/// `name`, those whose name contains it (ignoring case); with `search`, those found by part of
/// their name, the start of their id, or a Slack team or enterprise id.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants",
    operation_id = "listTenants",
    tag = "tenants",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page (50)"),
        ("cursor" = Option<String>, Query, description = "`next_cursor` of the previous page"),
        ("name" = Option<String>, Query, min_length = 1, max_length = 200,
         pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$",
         description = "Only tenants whose name contains this, ignoring case (taken as text: `%` and `_` are no wildcards)"),
        ("search" = Option<String>, Query, min_length = 1, max_length = 200,
         pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$",
         description = "Only tenants found by what support has at hand: part of the name (ignoring case), the start of the id, or a Slack team or enterprise id of one of their workspaces (taken as text)"),
    ),
    responses(
        (status = 200, description = "A page of tenants", body = TenantPage),
        ReadRefusals,
        (status = 422, description = "A refused limit, cursor, name or search", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    caller: Authenticated,
    request: HttpRequest,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let query = Query::of(&request);
    let page = query.page::<TenantCursor>()?;
    let search = tenant_search(&query)?;
    let listed = state.operator.tenants(&caller.0, search.clone(), &page).await?;
    let total = state.operator.tenants_total(&caller.0, search).await?;
    Ok(HttpResponse::Ok().json(TenantPage::of(listed, total)))
}

/// One tenant.
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}",
    operation_id = "getTenant",
    tag = "tenants",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The tenant", body = TenantDoc),
        ReadRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn get(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    Ok(HttpResponse::Ok().json(TenantDoc::from(state.operator.tenant(&caller.0, tenant).await?)))
}

/// Keep (sealed) the payloads of the tenant's claimed events until they are handled, so they
/// can be replayed; or stop keeping new ones.
#[utoipa::path(
    put,
    path = "/admin/v1/tenants/{id}/retain-payloads",
    operation_id = "setRetainPayloads",
    tag = "tenants",
    request_body = RetainPayloadsDoc,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The setting now", body = RetainPayloadsDoc),
        BodyRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn retain_payloads(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<RetainPayloadsDoc>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    state.operator.set_retain_payloads(&caller.0, tenant, body.enabled).await?;
    Ok(HttpResponse::Ok().json(RetainPayloadsDoc { enabled: body.enabled }))
}

/// Lets the tenant's read-only portal keys made with `read_payloads` read its kept payloads
/// (on), or stops them (off; the default). It decides each request from the change on: such a
/// key's event documents show the payload only while it is on, and say `not_allowed_by_tenant`
/// otherwise. A key for every tenant, or a portal key that may write, reads payloads if it was
/// made with `read_payloads`, whatever this says.
#[utoipa::path(
    put,
    path = "/admin/v1/tenants/{id}/read-only-portals-read-payloads",
    operation_id = "setReadOnlyPortalsReadPayloads",
    tag = "tenants",
    request_body = ReadOnlyPortalsReadPayloadsDoc,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The setting now", body = ReadOnlyPortalsReadPayloadsDoc),
        BodyRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn read_only_portals_read_payloads(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<ReadOnlyPortalsReadPayloadsDoc>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    state.operator.set_read_only_portals_read_payloads(&caller.0, tenant, body.enabled).await?;
    Ok(HttpResponse::Ok().json(ReadOnlyPortalsReadPayloadsDoc { enabled: body.enabled }))
}

/// Turns redelivery on, with a schedule (`standard` when left out), or off. On, the tenant's
/// events that were not handled (their dispatch failed, or they were stranded) are sent again
/// after each of the schedule's delays until one is handled or the schedule is spent, and
/// their payloads are kept (sealed) from the claim until then. Off, none is sent again.
#[utoipa::path(
    put,
    path = "/admin/v1/tenants/{id}/redelivery",
    operation_id = "setRedelivery",
    tag = "tenants",
    request_body = RedeliverySettingDoc,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The setting now", body = RedeliverySettingDoc),
        BodyRefusals,
        (status = 422, description = "A refused schedule (`field`: `schedule`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn redelivery(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<RedeliverySettingDoc>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let body = body.into_inner();
    let schedule = match (body.enabled, body.schedule) {
        (true, None) => Some(RedeliverySchedule::standard()),
        (true, Some(words)) => {
            Some(RedeliverySchedule::parse(&words).map_err(|e| ApiError::invalid_value("schedule", &e))?)
        }
        (false, None) => None,
        // Off: a schedule given anyway must still be one (a typo is answered), and is not kept.
        (false, Some(words)) => {
            RedeliverySchedule::parse(&words).map_err(|e| ApiError::invalid_value("schedule", &e))?;
            None
        }
    };
    let now =
        RedeliverySettingDoc { enabled: body.enabled, schedule: schedule.as_ref().map(|s| s.to_string()) };
    state.operator.set_redelivery(&caller.0, tenant, schedule).await?;
    Ok(HttpResponse::Ok().json(now))
}

/// Renames a tenant.
#[utoipa::path(
    patch,
    path = "/admin/v1/tenants/{id}",
    operation_id = "renameTenant",
    tag = "tenants",
    request_body = TenantChange,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The tenant now", body = TenantDoc),
        BodyRefusals,
        (status = 422, description = "A refused name", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn rename(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<TenantChange>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let name = TenantName::new(body.into_inner().name).map_err(|e| ApiError::invalid_value("name", &e))?;
    let renamed = state.operator.rename_tenant(&caller.0, tenant, name).await?;
    Ok(HttpResponse::Ok().json(TenantDoc::from(renamed)))
}

/// Offboards a customer: deletes the tenant, its workspace links (its next event is answered
/// as an unknown workspace's), installations and tokens, agent, kept payloads, keys scoped to
/// it and receipts. The audit trail keeps its entries. Only a key for every tenant, and not
/// read-only, may. Once the tenant is deleted the answer is 200, even if deleting its receipts
/// then stops (`receipts_left`: the next `doorman receipts prune` deletes them).
#[utoipa::path(
    delete,
    path = "/admin/v1/tenants/{id}",
    operation_id = "deleteTenant",
    tag = "tenants",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "Deleted, how many receipts went with it, and whether some are left", body = OffboardedDoc),
        ChangeRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let offboarded = state.operator.delete_tenant(&caller.0, tenant).await?;
    Ok(HttpResponse::Ok().json(OffboardedDoc::new(tenant, &offboarded)))
}

/// `name` (part of a tenant's name) and `search` (part of its name, the start of its id, or a
/// Slack team or enterprise id of one of its workspaces), each held to a name's rules; with
/// both, a tenant must match both.
fn tenant_search(query: &Query) -> Result<Vec<TenantSearch>, ApiError> {
    let text = |field| {
        query.get(field).map(TenantName::new).transpose().map_err(|e| ApiError::invalid_value(field, &e))
    };
    let name = text("name")?.map(TenantSearch::Name);
    let anything = text("search")?.map(TenantSearch::Anything);
    Ok(name.into_iter().chain(anything).collect())
}

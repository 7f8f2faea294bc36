//! `/admin/v1/keys`: admin API keys made, listed and revoked over HTTP, by a key for every
//! tenant that is not read-only (the command line's `doorman admin keys` does the same).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use chrono::Utc;
use doorman_domain::{KeyId, KeyName, KeyScope, OperatorError, TenantId};
use serde::Deserialize;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::documents::KeyList;
use super::refusals::{BodyRefusals, ChangeRefusals, ReadRefusals};
use crate::documents::{KeyDoc, NewKeyDoc, SignInLinkDoc, sign_in_link_lifetime};
use crate::operator::problem::{ApiError, Problem};
use crate::operator::state::AdminState;

/// A key to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// For people: 1 to 255 characters, no control characters.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
    /// Scope it to this tenant (it sees nothing else); absent or `null`: every tenant.
    #[serde(default)]
    pub tenant_id: Option<uuid::Uuid>,
    /// It may read, never change anything.
    #[serde(default)]
    pub read_only: bool,
    /// It may read the payloads tenants keep (what their customers wrote in Slack), in event
    /// documents: a key for every tenant, every tenant's; a key scoped to a tenant, that
    /// tenant's, and if it is read-only too (a customer's portal handed out to look) only while
    /// the tenant lets its read-only portals read them (`PUT
    /// /tenants/{id}/read-only-portals-read-payloads`). Absent: `false`.
    #[serde(default)]
    pub read_payloads: bool,
    /// It stops working this many seconds from now (a minute to two years); absent or `null`:
    /// never (revoke it when it is no longer needed).
    #[schema(minimum = 60, maximum = 63_072_000, example = 7_776_000)]
    #[serde(default, deserialize_with = "super::numbers::optional_whole")]
    pub expires_in_seconds: Option<u64>,
}

/// The longest a key may be made to last before it expires: two years.
const LONGEST_EXPIRY: u64 = 2 * 365 * 24 * 3600;

/// A key id from a path: one that is not a UUID names no key (404).
fn key_path(raw: &str) -> Result<KeyId, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found(format!("no key with id {raw:?}")))
}

/// Makes a key and answers it once: only its hash is stored.
#[utoipa::path(
    post,
    path = "/admin/v1/keys",
    operation_id = "createKey",
    tag = "keys",
    request_body = NewKey,
    responses(
        (status = 201, description = "Made; `key` is shown this once", body = NewKeyDoc,
         headers(("Location" = String, description = "The key's URL"))),
        BodyRefusals,
        (status = 422, description = "A refused name or expiry", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    caller: Authenticated,
    body: Object<NewKey>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let NewKey { name, tenant_id, read_only, read_payloads, expires_in_seconds } = body.into_inner();
    let name = KeyName::new(name).map_err(|e| ApiError::invalid_value("name", &e))?;
    let expires_at = match expires_in_seconds {
        None => None,
        Some(seconds) if (60..=LONGEST_EXPIRY).contains(&seconds) => {
            Some(Utc::now() + chrono::Duration::seconds(seconds as i64))
        }
        Some(_) => {
            return Err(ApiError::invalid("expires_in_seconds", "must be 60 to 63,072,000 (two years)"));
        }
    };
    let scope = KeyScope { tenant: tenant_id.map(TenantId::from_uuid), read_only, read_payloads };
    let (made, secret) = state.operator.create_key(&caller.0, name, scope, expires_at).await?;
    let doc = NewKeyDoc::new(made, &secret);
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/admin/v1/keys/{}", doc.key_doc.id)))
        .json(doc))
}

/// Every key, oldest first, revoked and expired ones included: never a secret.
#[utoipa::path(
    get,
    path = "/admin/v1/keys",
    operation_id = "listKeys",
    tag = "keys",
    responses(
        (status = 200, description = "The keys", body = KeyList),
        ReadRefusals,
        (status = 403, description = "A read-only key, or one scoped to a tenant: only a key for every tenant, not read-only, manages keys", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn list(caller: Authenticated, state: web::Data<AdminState>) -> Result<HttpResponse, ApiError> {
    let keys = state.operator.keys(&caller.0).await?;
    Ok(HttpResponse::Ok().json(keys.into_iter().collect::<KeyList>()))
}

/// One key: its scope, expiry and last use.
#[utoipa::path(
    get,
    path = "/admin/v1/keys/{key_id}",
    operation_id = "getKey",
    tag = "keys",
    params(("key_id" = uuid::Uuid, Path, description = "The key's id")),
    responses(
        (status = 200, description = "The key", body = KeyDoc),
        ReadRefusals,
        (status = 403, description = "A read-only key, or one scoped to a tenant: only a key for every tenant, not read-only, manages keys", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let id = key_path(&path)?;
    Ok(HttpResponse::Ok().json(KeyDoc::from(state.operator.key(&caller.0, id).await?)))
}

/// What [`sign_in_link`] does, as the OpenAPI document says it: the link's lifetime comes
/// from its constant, so the text is made here rather than written as a doc comment.
fn sign_in_link_summary() -> String {
    [
        "A one-time sign-in link to the operator console for a key scoped to one tenant (a",
        "customer's portal): the browser that opens it gets a session acting as the key, which ends",
        &format!(
            "when the key is revoked. Good for one sign-in within {}; shown once. Only a key for",
            sign_in_link_lifetime()
        ),
        "every tenant, and not read-only, makes one; a key for every tenant gets none (409: the",
        "request is well formed, the key is of the wrong kind), and none is made while",
        "`DOORMAN_CONSOLE_URL` is unset (409: a path alone does not work pasted to a customer).",
    ]
    .join("\n")
}

/// A one-time sign-in link to the operator console for a key scoped to one tenant (a
/// customer's portal), shown once: `sign_in_link_summary` says the rest.
#[utoipa::path(
    post,
    summary = sign_in_link_summary(),
    path = "/admin/v1/keys/{key_id}/sign-in-links",
    operation_id = "createSignInLink",
    tag = "keys",
    params(("key_id" = uuid::Uuid, Path, description = "The key's id")),
    responses(
        (status = 201, description = "The link, shown once", body = SignInLinkDoc,
         headers(("Location" = String, description = "The link itself (its `url`)"))),
        ChangeRefusals,
        (status = 409, description = "The key is for every tenant (`key-for-every-tenant`): its holder signs in with the key; or `DOORMAN_CONSOLE_URL` is unset (`sign-in-links-off`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn sign_in_link(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let id = key_path(&path)?;
    let link = match state.operator.create_sign_in_link(&caller.0, id).await {
        Ok(link) => link,
        Err(OperatorError::Refused { what: "key", reason }) => {
            return Err(ApiError::new(StatusCode::CONFLICT, "key-for-every-tenant", reason));
        }
        Err(other) => return Err(other.into()),
    };
    let link = SignInLinkDoc::from(&link);
    let location = link.url.clone();
    Ok(HttpResponse::Created().insert_header((header::LOCATION, location)).json(link))
}

/// Revokes a key: from its next request on, in every admin process, it is refused. A key may
/// revoke itself.
#[utoipa::path(
    delete,
    path = "/admin/v1/keys/{key_id}",
    operation_id = "revokeKey",
    tag = "keys",
    params(("key_id" = uuid::Uuid, Path, description = "The key's id")),
    responses(
        (status = 204, description = "Revoked"),
        ChangeRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn revoke(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let id = key_path(&path)?;
    state.operator.revoke_key(&caller.0, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

//! `/admin/v1/tenants/{id}/agent`: where the tenant's events go, paused or not.

use std::fmt;

use actix_web::{HttpResponse, web};
use doorman_domain::{AgentSecret, AgentUrl, OperatorError};
use serde::Deserialize;
use utoipa::ToSchema;

use super::Authenticated;
use super::body::Object;
use super::refusals::{BodyRefusals, ChangeRefusals, ReadRefusals};
use crate::documents::AgentDoc;
use crate::operator::params::tenant_path;
use crate::operator::problem::{ApiError, Problem};
use crate::operator::state::AdminState;

/// The agent to set.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// An https URL on a public address (unless the server allows private ones): a DNS name
    /// or an IPv4 address, no credentials, no spaces (Unicode's, such as U+00A0, included) and
    /// no control characters: the pattern refuses what `AgentUrl::from_operator` refuses.
    #[schema(
        max_length = 2048,
        pattern = "^[hH][tT][tT][pP][sS]?://(([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?|(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3})(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?([/?#][^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*)?$",
        example = "https://agent.example/slack"
    )]
    pub url: String,
    /// `whsec_` and base64 of at least 16 bytes (Standard Webhooks): the agent verifies
    /// dispatches with it. Never returned.
    #[schema(
        pattern = "^whsec_(?:[A-Za-z0-9+/]{4}){5,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
    )]
    pub signing_secret: String,
}

impl fmt::Debug for NewAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewAgent")
            .field("url", &"<not logged>")
            .field("signing_secret", &"<redacted>")
            .finish()
    }
}

/// The tenant's agent (never its secret); `url: null` when none is set (pausing, resuming or
/// removing it then answers 409 `no-agent`).
#[utoipa::path(
    get,
    path = "/admin/v1/tenants/{id}/agent",
    operation_id = "getAgent",
    tag = "agents",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The agent, or `url: null` when none is set", body = AgentDoc),
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
    let agent = match state.operator.agent(&caller.0, tenant).await {
        Ok(agent) => AgentDoc::from(agent),
        Err(OperatorError::NoAgent(_)) => AgentDoc::NONE,
        Err(other) => return Err(other.into()),
    };
    Ok(HttpResponse::Ok().json(agent))
}

/// Sets (or replaces) the tenant's agent. A paused agent stays paused.
#[utoipa::path(
    put,
    path = "/admin/v1/tenants/{id}/agent",
    operation_id = "setAgent",
    tag = "agents",
    request_body = NewAgent,
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The agent now", body = AgentDoc),
        BodyRefusals,
        (status = 422, description = "A URL that is not https or not public, or a secret that is not whsec_…", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn set(
    caller: Authenticated,
    path: web::Path<String>,
    body: Object<NewAgent>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    let body = body.into_inner();
    let url = AgentUrl::from_operator(&body.url).map_err(|e| ApiError::invalid_value("url", &e))?;
    let secret = AgentSecret::parse(&body.signing_secret)
        .map_err(|e| ApiError::invalid_value("signing_secret", &e))?;
    state
        .operator
        .set_agent(&caller.0, tenant, url, secret)
        .await
        .map_err(|e| ApiError::from_operator(e, Some("url")))?;
    let agent = state.operator.agent(&caller.0, tenant).await?;
    Ok(HttpResponse::Ok().json(AgentDoc::from(agent)))
}

/// Pauses the tenant's agent: its deliveries are answered 503 (Slack retries them) in every
/// serving process as soon as it hears of the change (milliseconds).
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/agent/pause",
    operation_id = "pauseAgent",
    tag = "agents",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The agent now", body = AgentDoc),
        ChangeRefusals,
        (status = 409, description = "No agent set", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn pause(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    set_paused(caller, &path, state, true).await
}

/// Resumes the tenant's agent.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/agent/resume",
    operation_id = "resumeAgent",
    tag = "agents",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 200, description = "The agent now", body = AgentDoc),
        ChangeRefusals,
        (status = 409, description = "No agent set", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn resume(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    set_paused(caller, &path, state, false).await
}

async fn set_paused(
    caller: Authenticated,
    tenant: &str,
    state: web::Data<AdminState>,
    paused: bool,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(tenant)?;
    state.operator.pause_agent(&caller.0, tenant, paused).await?;
    let agent = state.operator.agent(&caller.0, tenant).await?;
    Ok(HttpResponse::Ok().json(AgentDoc::from(agent)))
}

/// Removes the tenant's agent and its secret: deliveries are answered 503 (no agent), and
/// Slack retries them, until one is set again. An action beside pause and resume rather than
/// `DELETE …/agent`: the agent's document stays readable (`url: null`), so a `DELETE` that
/// leaves it answering 200 would say the opposite of what HTTP means by one.
#[utoipa::path(
    post,
    path = "/admin/v1/tenants/{id}/agent/remove",
    operation_id = "removeAgent",
    tag = "agents",
    params(("id" = uuid::Uuid, Path, description = "The tenant's id")),
    responses(
        (status = 204, description = "Removed"),
        ChangeRefusals,
        (status = 409, description = "The tenant has no agent", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn remove(
    caller: Authenticated,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ApiError> {
    let tenant = tenant_path(&path)?;
    state.operator.remove_agent(&caller.0, tenant).await?;
    Ok(HttpResponse::NoContent().finish())
}

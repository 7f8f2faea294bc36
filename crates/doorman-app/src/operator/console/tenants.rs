//! Tenants: search and create; one tenant's page (its workspaces and installations, its agent,
//! whether payloads are kept, redelivery, whether its read-only portals read payloads, an
//! install link), and the forms that change them. Each form is
//! one operator use case, then back to the tenant's page with a notice. Support (a session for
//! every tenant that may write) also renames a tenant and offboards it, after a page that says
//! what goes with it and asks for its name typed back.

use std::ops::RangeInclusive;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use doorman_domain::usecases::operator::events::EventQuery;
use doorman_domain::usecases::operator::installs::LinkLifetime;
use doorman_domain::{
    AgentSecret, AgentUrl, OperatorError, RedeliverySchedule, TenantCursor, TenantId, TenantName,
    TenantRecord, TenantSearch, Total, WorkspaceId,
};

use super::charts::{self, Chart};
use super::page::{self, Chrome};
use super::session::Session;
use super::{ConsoleError, see_other};
use crate::documents::{AgentDoc, InstallLinkDoc, InstallationDoc, KeyDoc, TenantDoc, WorkspaceDoc};
use crate::operator::params::{tenant_path, workspace_path};
use crate::operator::problem::ApiError;
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// A day, in seconds.
const DAY: u64 = 24 * 3600;

/// An install link's `days`, as its form takes them (`tenant.html` too): whole days, up to the
/// longest a link may last.
pub const INSTALL_LINK_DAYS: RangeInclusive<u64> = 1..=LinkLifetime::MAX.as_secs() / DAY;

/// `days` when the form leaves it out (and the form's own default): a link's default lifetime.
pub const INSTALL_LINK_DEFAULT_DAYS: u64 = LinkLifetime::DEFAULT.as_secs() / DAY;

#[derive(Template)]
#[template(path = "console/tenants.html")]
struct TenantsPage {
    chrome: Chrome,
    search: String,
    tenants: Vec<TenantDoc>,
    /// The next page's query string, if there is one.
    next: Option<String>,
    may_create: bool,
    /// How many it finds, over every page: "12 tenants", or "more than 1,000".
    total: String,
}

#[derive(Template)]
#[template(path = "console/tenant.html")]
struct TenantPage {
    chrome: Chrome,
    tenant: TenantDoc,
    workspaces: Vec<WorkspaceDoc>,
    installations: Vec<InstallationDoc>,
    agent: AgentDoc,
    /// Linking by id is for sessions that see every tenant (a scoped one installs instead).
    may_link_by_id: bool,
    /// An install link just made, shown once.
    install_link: Option<InstallLinkDoc>,
    /// Whether install links can be made (the Slack app is configured).
    installs_on: bool,
    /// The redelivery form's schedule: the tenant's, or the standard one to start from.
    schedule_field: String,
    /// Whether the session may rename and delete it ([`support_only`]).
    may_manage_tenant: bool,
    /// Its dispatches over the last day and week, drawn ([`charts`]).
    charts: Vec<Chart>,
    /// Failed dispatches in the last 24 hours.
    failed_today: u64,
}

/// What deleting a tenant takes with it, before it is done: the confirmation the command
/// line's `tenant delete` asks for with `--yes`, here as the tenant's name typed back.
#[derive(Template)]
#[template(path = "console/tenant_delete.html")]
struct DeletePage {
    chrome: Chrome,
    tenant: TenantDoc,
    workspaces: Vec<WorkspaceDoc>,
    /// How many, in words: "1 installation".
    installations: String,
    agent: AgentDoc,
    /// The keys scoped to it (revoked ones too: they go with it).
    keys: Vec<KeyDoc>,
    /// Its receipts, in words: "17 events", or "more than 1,000 events".
    receipts: String,
    /// Why the last try deleted nothing, if it did not.
    refused: Option<&'static str>,
}

/// The tenants the session sees; `?search=` finds them by part of the name, the start of the
/// id or a Slack team or enterprise id, and a whole id goes straight to its tenant's page. A
/// session for one tenant goes to that tenant.
pub async fn list(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    if let Some(own) = session.key.scope.tenant {
        return Ok(see_other(format!("/console/tenants/{own}")));
    }
    let query = Query::of(&request);
    let search = query.get("search").unwrap_or_default().trim().to_owned();
    if let Ok(id) = search.parse::<TenantId>() {
        return Ok(see_other(format!("/console/tenants/{id}")));
    }
    let found_by = if search.is_empty() {
        vec![]
    } else {
        vec![TenantSearch::Anything(
            TenantName::new(&search).map_err(|e| ApiError::invalid_value("search", &e))?,
        )]
    };
    let page = query.page::<TenantCursor>()?;
    let listed = state.operator.tenants(&session.caller, found_by.clone(), &page).await?;
    let total = state.operator.tenants_total(&session.caller, found_by).await?;
    let next = listed.next.map(|cursor| page::next_page(&[("search", &search)], &cursor));
    page::ok(&TenantsPage {
        chrome: session.chrome(&request),
        search,
        tenants: listed.items.into_iter().map(TenantDoc::from).collect(),
        next,
        may_create: session.caller.actor.may_create_tenants(),
        total: page::total(total, "tenant", "tenants"),
    })
}

pub async fn create(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let form = session.form(&request, &body)?;
    let name = TenantName::new(form.required("name")?).map_err(|e| ApiError::invalid_value("name", &e))?;
    let created = state.operator.create_tenant(&session.caller, name, None).await?;
    Ok(see_other(format!("/console/tenants/{}?done=created", created.tenant.id)))
}

pub async fn show(
    request: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let tenant = tenant_path(&path)?;
    render(&request, &session, &state, tenant, None).await
}

async fn render(
    request: &HttpRequest,
    session: &Session,
    state: &AdminState,
    tenant: TenantId,
    install_link: Option<InstallLinkDoc>,
) -> Result<HttpResponse, ConsoleError> {
    let caller = &session.caller;
    let record = state.operator.tenant(caller, tenant).await?;
    let workspaces = state.operator.workspaces(caller, tenant).await?;
    let installations = state.operator.installations(caller, Some(tenant)).await?;
    let agent = match state.operator.agent(caller, tenant).await {
        Ok(agent) => AgentDoc::from(agent),
        Err(OperatorError::NoAgent(_)) => AgentDoc::NONE,
        Err(other) => return Err(other.into()),
    };
    let schedule_field = record.redelivery.clone().unwrap_or_else(RedeliverySchedule::standard).to_string();
    let day = state.operator.activity(caller, tenant, 24).await?;
    let week = state.operator.activity(caller, tenant, 168).await?;
    let charts = vec![
        charts::volume("day", "Dispatches, last 24 hours", &day),
        charts::latency("day-latency", "Dispatch time, last 24 hours", &day),
        charts::volume("week", "Dispatches, last 7 days", &week),
    ];
    page::ok(&TenantPage {
        failed_today: day.total().failed,
        charts,
        chrome: session.chrome(request),
        schedule_field,
        tenant: TenantDoc::from(record),
        workspaces: workspaces.into_iter().map(WorkspaceDoc::from).collect(),
        installations: installations.into_iter().map(InstallationDoc::from).collect(),
        agent,
        may_link_by_id: session.may_write() && session.key.scope.tenant.is_none(),
        install_link,
        installs_on: state.operator.installs_on(),
        may_manage_tenant: session.caller.actor.may_create_tenants(),
    })
}

/// Renaming and deleting a tenant are support's, in the console: a session for every tenant
/// that may write. Any other session is refused with 403 (a customer's portal for its own
/// tenant too, though the API lets a scoped key that may write rename it), after the tenant
/// is looked up as the session sees it, so another tenant's is a 404 as everywhere else.
async fn support_only(
    session: &Session,
    state: &AdminState,
    tenant: TenantId,
) -> Result<TenantRecord, ConsoleError> {
    let record = state.operator.tenant(&session.caller, tenant).await?;
    if !session.caller.actor.may_create_tenants() {
        return Err(ConsoleError::forbidden(
            "only support (a key for every tenant, not read-only) renames or deletes a tenant",
        ));
    }
    Ok(record)
}

/// `name`: the tenant's new name.
pub async fn rename(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    support_only(&session, &state, tenant).await?;
    let name = TenantName::new(form.required("name")?).map_err(|e| ApiError::invalid_value("name", &e))?;
    state.operator.rename_tenant(&session.caller, tenant, name).await?;
    Ok(back(tenant, "renamed"))
}

/// The confirmation before a tenant is deleted: what goes with it, and its name to type back.
pub async fn delete_page(
    request: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let tenant = tenant_path(&path)?;
    let record = support_only(&session, &state, tenant).await?;
    confirmation(&request, &session, &state, record, None).await
}

async fn confirmation(
    request: &HttpRequest,
    session: &Session,
    state: &AdminState,
    record: TenantRecord,
    refused: Option<&'static str>,
) -> Result<HttpResponse, ConsoleError> {
    let caller = &session.caller;
    let tenant = record.id;
    let agent = match state.operator.agent(caller, tenant).await {
        Ok(agent) => AgentDoc::from(agent),
        Err(OperatorError::NoAgent(_)) => AgentDoc::NONE,
        Err(other) => return Err(other.into()),
    };
    let receipts = state.operator.events_total(caller, Some(tenant), None, EventQuery::default()).await?;
    let keys = state.operator.keys(caller).await?.into_iter().map(KeyDoc::from);
    let page = DeletePage {
        chrome: session.chrome(request),
        workspaces: state
            .operator
            .workspaces(caller, tenant)
            .await?
            .into_iter()
            .map(WorkspaceDoc::from)
            .collect(),
        installations: count(state.operator.installations(caller, Some(tenant)).await?.len(), "installation"),
        agent,
        keys: keys.filter(|key| key.tenant_id == Some(*tenant.as_uuid())).collect(),
        receipts: page::total(receipts, "event", "events"),
        tenant: TenantDoc::from(record),
        refused,
    };
    Ok(page::html(if refused.is_some() { StatusCode::UNPROCESSABLE_ENTITY } else { StatusCode::OK }, &page))
}

/// `confirm_name`: the tenant's name, typed back. Then the offboarding the API's
/// `DELETE /tenants/{id}` and `doorman tenant delete` run (the same use case, audited the
/// same way), and on to the tenants with a notice. A name that is not the tenant's deletes
/// nothing: the confirmation again, saying why (422).
pub async fn delete(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let record = support_only(&session, &state, tenant).await?;
    if form.get("confirm_name") != Some(record.name.trim()) {
        let why = "Nothing was deleted: the name typed is not this tenant's.";
        return confirmation(&request, &session, &state, record, Some(why)).await;
    }
    let offboarded = state.operator.delete_tenant(&session.caller, tenant).await?;
    tracing::info!(tenant.id = %tenant, receipts = offboarded.receipts, by = %session.key.id, "tenant deleted in the console");
    Ok(see_other(if offboarded.receipts_left {
        "/console/tenants?done=deleted-receipts-left"
    } else {
        "/console/tenants?done=deleted"
    }))
}

/// A count in words: `1 installation`, `2 installations`.
fn count(n: usize, one: &str) -> String {
    page::total(Total { count: n as u64, lower_bound: false }, one, &format!("{one}s"))
}

/// A form on a tenant's page: the session, the tenant and the checked form.
async fn tenant_form(
    request: &HttpRequest,
    state: &AdminState,
    id: &str,
    body: &[u8],
) -> Result<(Session, TenantId, super::form::Form), ConsoleError> {
    let session = Session::of(request, state).await?;
    let tenant = tenant_path(id)?;
    let form = session.form(request, body)?;
    Ok((session, tenant, form))
}

fn back(tenant: TenantId, done: &str) -> HttpResponse {
    see_other(format!("/console/tenants/{tenant}?done={done}"))
}

pub async fn link_workspace(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let id = |field: &str| {
        form.get(field).map(WorkspaceId::new).transpose().map_err(|e| ApiError::invalid_value(field, &e))
    };
    let (team, enterprise) = (id("team_id")?, id("enterprise_id")?);
    if team.is_none() && enterprise.is_none() {
        return Err(ConsoleError::bad_request(
            "give a team id, an enterprise id (an org-wide install), or both",
        ));
    }
    state.operator.link_workspace(&session.caller, tenant, team, enterprise).await?;
    Ok(back(tenant, "linked"))
}

pub async fn unlink_workspace(
    request: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (id, workspace) = path.into_inner();
    let (session, tenant, _) = tenant_form(&request, &state, &id, &body).await?;
    state.operator.unlink_workspace(&session.caller, tenant, &workspace_path(&workspace)?).await?;
    Ok(back(tenant, "unlinked"))
}

pub async fn set_agent(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let url =
        AgentUrl::from_operator(form.required("url")?).map_err(|e| ApiError::invalid_value("url", &e))?;
    let secret = AgentSecret::parse(form.required("signing_secret")?)
        .map_err(|e| ApiError::invalid_value("signing_secret", &e))?;
    state
        .operator
        .set_agent(&session.caller, tenant, url, secret)
        .await
        .map_err(|e| ApiError::from_operator(e, Some("url")))?;
    Ok(back(tenant, "agent-set"))
}

pub async fn pause_agent(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    set_paused(&request, &path, &body, &state, true).await
}

pub async fn resume_agent(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    set_paused(&request, &path, &body, &state, false).await
}

async fn set_paused(
    request: &HttpRequest,
    id: &str,
    body: &[u8],
    state: &AdminState,
    paused: bool,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, _) = tenant_form(request, state, id, body).await?;
    state.operator.pause_agent(&session.caller, tenant, paused).await?;
    Ok(back(tenant, if paused { "paused" } else { "resumed" }))
}

/// `enabled=on|off`.
pub async fn retain_payloads(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let on = enabled(&form)?;
    state.operator.set_retain_payloads(&session.caller, tenant, on).await?;
    Ok(back(tenant, if on { "payloads-on" } else { "payloads-off" }))
}

/// `enabled=on|off`: whether the tenant's read-only portal keys made to read payloads read them.
pub async fn read_only_portals_read_payloads(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let on = enabled(&form)?;
    state.operator.set_read_only_portals_read_payloads(&session.caller, tenant, on).await?;
    Ok(back(tenant, if on { "portals-payloads-on" } else { "portals-payloads-off" }))
}

/// A form's `enabled`: `on` or `off`.
fn enabled(form: &super::form::Form) -> Result<bool, ConsoleError> {
    match form.required("enabled")? {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(ConsoleError::bad_request("enabled: must be on or off")),
    }
}

/// `enabled=on` with `schedule` (`standard` when left empty), or `enabled=off` alone.
pub async fn redelivery(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let schedule = match (form.required("enabled")?, form.get("schedule")) {
        ("on", None) => Some(RedeliverySchedule::standard()),
        ("on", Some(words)) => {
            Some(RedeliverySchedule::parse(words).map_err(|e| ApiError::invalid_value("schedule", &e))?)
        }
        ("off", None) => None,
        ("off", Some(_)) => {
            return Err(ConsoleError::bad_request("schedule: must be left out when enabled is off"));
        }
        _ => return Err(ConsoleError::bad_request("enabled: must be on or off")),
    };
    let on = schedule.is_some();
    state.operator.set_redelivery(&session.caller, tenant, schedule).await?;
    Ok(back(tenant, if on { "redelivery-on" } else { "redelivery-off" }))
}

/// An install link for the tenant's customer, shown once on the tenant's page. `days`:
/// [`INSTALL_LINK_DAYS`] ([`INSTALL_LINK_DEFAULT_DAYS`] when left out).
pub async fn install_link(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, form) = tenant_form(&request, &state, &path, &body).await?;
    let days = match form.get("days") {
        None => INSTALL_LINK_DEFAULT_DAYS,
        Some(raw) => raw.parse::<u64>().ok().filter(|d| INSTALL_LINK_DAYS.contains(d)).ok_or_else(|| {
            ConsoleError::bad_request(format!(
                "days: must be a whole number from {} to {}",
                INSTALL_LINK_DAYS.start(),
                INSTALL_LINK_DAYS.end()
            ))
        })?,
    };
    let lifetime = LinkLifetime::new(Duration::from_secs(days * DAY))
        .map_err(|e| ApiError::invalid_value("days", &e))?;
    let link = state.operator.create_install_link(&session.caller, tenant, lifetime).await?;
    render(&request, &session, &state, tenant, Some(InstallLinkDoc::from(link))).await
}

/// For the templates: a workspace's id as its unlink path names it.
impl WorkspaceDoc {
    pub fn path_id(&self) -> &str {
        self.team_id.as_deref().or(self.enterprise_id.as_deref()).unwrap_or_default()
    }
}

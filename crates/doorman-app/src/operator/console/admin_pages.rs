//! The audit trail (a scoped session reads its tenant's entries only) and keys (for a session
//! that may do everything: create, shown once; revoke; a customer's sign-in link, shown once).

use std::ops::RangeInclusive;

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::Utc;
use doorman_domain::{AuditAction, AuditCursor, AuditFilter, KeyId, KeyName, KeyScope, TenantId};

use super::events::instant;
use super::page::{self, Chrome};
use super::session::Session;
use super::{ConsoleError, see_other};
use crate::documents::{AuditDoc, KeyDoc, NewKeyDoc, SignInLinkDoc};
use crate::operator::params::tenant_path;
use crate::operator::problem::ApiError;
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// A new key's `expires_in_days`, as its form takes them (`keys.html` too): up to two years.
pub const KEY_EXPIRY_DAYS: RangeInclusive<i64> = 1..=730;

#[derive(Template)]
#[template(path = "console/audit.html")]
struct AuditPage {
    chrome: Chrome,
    tenant: String,
    /// The filters as asked (blank: any), shown back in the form.
    action: String,
    key: String,
    since: String,
    until: String,
    actions: [&'static str; AuditAction::ALL.len()],
    entries: Vec<AuditDoc>,
    next: Option<String>,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    chrome: Chrome,
    keys: Vec<KeyDoc>,
    /// A key just made: its secret, shown this once.
    made: Option<NewKeyDoc>,
    /// A sign-in link just made, shown this once.
    link: Option<SignInLinkDoc>,
    /// Whether sign-in links can be made (`DOORMAN_CONSOLE_URL` is set).
    sign_in_links_on: bool,
}

impl KeysPage {
    /// A key's state in words, now.
    fn state_of(&self, key: &KeyDoc) -> &'static str {
        key.state_at(Utc::now())
    }
}

/// `?tenant=` narrows the trail to one tenant (a scoped session always reads its own);
/// `action`, `key`, `since` and `until` (RFC 3339, or a browser's `2026-12-01T10:00` read as
/// UTC) narrow it as the API's do. Blank fields select everything.
pub async fn audit(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let query = Query::of(&request);
    let text = |name| query.get(name).map(str::trim).unwrap_or_default().to_owned();
    let (asked, action, key, since, until) =
        (text("tenant"), text("action"), text("key"), text("since"), text("until"));
    let tenant: Option<TenantId> = (!asked.is_empty()).then(|| tenant_path(&asked)).transpose()?;
    let filter = AuditFilter {
        action: (!action.is_empty())
            .then(|| AuditAction::parse(&action).map_err(|e| ApiError::invalid_value("action", &e)))
            .transpose()?,
        key: (!key.is_empty())
            .then(|| key.parse().map_err(|_| ConsoleError::bad_request("key: must be a key's id (a UUID)")))
            .transpose()?,
        since: instant("since", &since)?,
        until: instant("until", &until)?,
    };
    let page = query.page::<AuditCursor>()?;
    let listed = state.operator.audit(&session.caller, tenant, &filter, &page).await?;
    let filters = [
        ("tenant", asked.as_str()),
        ("action", &action),
        ("key", &key),
        ("since", &since),
        ("until", &until),
    ];
    let next = listed.next.map(|cursor| page::next_page(&filters, &cursor));
    page::ok(&AuditPage {
        chrome: session.chrome(&request),
        tenant: asked,
        action,
        key,
        since,
        until,
        actions: AuditAction::ALL.map(AuditAction::as_str),
        entries: listed.items.into_iter().map(AuditDoc::from).collect(),
        next,
    })
}

pub async fn keys(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    render(&request, &session, &state, None, None).await
}

async fn render(
    request: &HttpRequest,
    session: &Session,
    state: &AdminState,
    made: Option<NewKeyDoc>,
    link: Option<SignInLinkDoc>,
) -> Result<HttpResponse, ConsoleError> {
    let keys = state.operator.keys(&session.caller).await?;
    page::ok(&KeysPage {
        chrome: session.chrome(request),
        keys: keys.into_iter().map(KeyDoc::from).collect(),
        made,
        link,
        sign_in_links_on: state.operator.sign_in_links_on(),
    })
}

/// `name`, `tenant` (an id; blank: every tenant), `read_only`, `expires_in_days`
/// ([`KEY_EXPIRY_DAYS`]; blank: never).
pub async fn create_key(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let form = session.form(&request, &body)?;
    let name = KeyName::new(form.required("name")?).map_err(|e| ApiError::invalid_value("name", &e))?;
    let tenant = form.get("tenant").map(tenant_path).transpose()?;
    let expires_at = match form.get("expires_in_days") {
        None => None,
        Some(raw) => {
            let days = raw.parse::<i64>().ok().filter(|d| KEY_EXPIRY_DAYS.contains(d)).ok_or_else(|| {
                ConsoleError::bad_request(format!(
                    "expires_in_days: must be a whole number from {} to {}",
                    KEY_EXPIRY_DAYS.start(),
                    KEY_EXPIRY_DAYS.end()
                ))
            })?;
            Some(Utc::now() + chrono::Duration::days(days))
        }
    };
    let scope = KeyScope { tenant, read_only: form.ticked("read_only") };
    let (made, secret) = state
        .operator
        .create_key(&session.caller, name, scope, expires_at)
        .await
        .map_err(|e| ApiError::from_operator(e, Some("tenant")))?;
    tracing::info!(key.id = %made.id, by = %session.key.id, "admin API key created in the console");
    render(&request, &session, &state, Some(NewKeyDoc::new(made, &secret)), None).await
}

fn key_path(raw: &str) -> Result<KeyId, ConsoleError> {
    raw.parse().map_err(|_| ConsoleError::not_found(format!("no key {raw}")))
}

pub async fn revoke_key(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    session.form(&request, &body)?;
    state.operator.revoke_key(&session.caller, key_path(&path)?).await?;
    // A session may revoke its own key: it then ends with this request.
    Ok(see_other("/console/keys?done=revoked"))
}

pub async fn sign_in_link(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    session.form(&request, &body)?;
    let link = state.operator.create_sign_in_link(&session.caller, key_path(&path)?).await?;
    let doc = SignInLinkDoc::from(&link);
    render(&request, &session, &state, None, Some(doc)).await
}

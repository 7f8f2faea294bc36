//! The audit trail (a scoped session reads its tenant's entries only) and keys (for a session
//! that may do everything: create, shown once, its tenant picked by name; revoke; a customer's
//! sign-in link, shown once).

use std::ops::RangeInclusive;

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::Utc;
use doorman_domain::{
    AuditAction, AuditCursor, AuditFilter, KeyId, KeyName, KeyScope, PageLimit, PageRequest, TenantId,
    TenantName, TenantSearch,
};

use super::events::instant;
use super::page::{self, Chrome};
use super::session::Session;
use super::{ConsoleError, see_other};
use crate::documents::{AuditDoc, KeyDoc, NewKeyDoc, SignInLinkDoc, TenantDoc};
use crate::operator::params::tenant_path;
use crate::operator::problem::ApiError;
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// A new key's `expires_in_days`, as its form takes them (`keys.html` too): up to two years.
pub const KEY_EXPIRY_DAYS: RangeInclusive<i64> = 1..=730;

/// The most tenants the new key's picker offers at once (`keys.html` too): past it, the
/// picker says how many there are and a search by name narrows them, so a deployment of
/// thousands of tenants never sends thousands of options.
pub const PICKER_SIZE: u32 = 25;

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
    /// The new key's tenant to choose from.
    picker: Picker,
}

/// The tenants a new key may be scoped to, as its form offers them: those `search` finds
/// (by part of the name, the start of the id, or a Slack team or enterprise id, as the tenants
/// page finds them; blank: every tenant), at most [`PICKER_SIZE`], oldest first.
struct Picker {
    search: String,
    tenants: Vec<TenantDoc>,
    /// How many it finds over all, in words: "3 tenants", "more than 1,000 tenants".
    total: String,
    /// Whether it finds more than it offers.
    more: bool,
}

impl Picker {
    async fn of(session: &Session, state: &AdminState, search: String) -> Result<Self, ConsoleError> {
        let found_by = if search.is_empty() {
            vec![]
        } else {
            let words = TenantName::new(&search).map_err(|e| ApiError::invalid_value("tenant_search", &e))?;
            vec![TenantSearch::Anything(words)]
        };
        let limit = PageLimit::new(PICKER_SIZE).map_err(doorman_domain::OperatorError::from)?;
        let first = PageRequest { limit, after: None };
        let listed = state.operator.tenants(&session.caller, found_by.clone(), &first).await?;
        let total = state.operator.tenants_total(&session.caller, found_by).await?;
        Ok(Self {
            search,
            tenants: listed.items.into_iter().map(TenantDoc::from).collect(),
            total: page::total(total, "tenant", "tenants"),
            more: listed.next.is_some(),
        })
    }

    /// What it found, in words: `3 tenants found for “acme”.`, and when it offers fewer than it
    /// found, that a search finds the others.
    fn said(&self) -> String {
        let found = if self.search.is_empty() {
            self.total.clone()
        } else {
            format!("{} found for “{}”", self.total, self.search)
        };
        if self.more {
            format!(
                "{found}: the first {} are offered below; search by name to find the others.",
                self.tenants.len()
            )
        } else {
            format!("{found}.")
        }
    }

    /// Whether `tenant` is the one to offer first: the only one a search found.
    fn chosen(&self, tenant: &TenantDoc) -> bool {
        !self.search.is_empty() && self.tenants.len() == 1 && !self.more && self.tenants[0].id == tenant.id
    }
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

/// The keys, and the form to create one; `?tenant_search=` narrows the tenants its picker offers.
pub async fn keys(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let search = Query::of(&request).get("tenant_search").map(str::trim).unwrap_or_default().to_owned();
    render(&request, &session, &state, None, None, search).await
}

async fn render(
    request: &HttpRequest,
    session: &Session,
    state: &AdminState,
    made: Option<NewKeyDoc>,
    link: Option<SignInLinkDoc>,
    search: String,
) -> Result<HttpResponse, ConsoleError> {
    let keys = state.operator.keys(&session.caller).await?;
    page::ok(&KeysPage {
        chrome: session.chrome(request),
        keys: keys.into_iter().map(KeyDoc::from).collect(),
        made,
        link,
        sign_in_links_on: state.operator.sign_in_links_on(),
        picker: Picker::of(session, state, search).await?,
    })
}

/// `name`, `tenant` (an id, as the picker's options give it; blank: every tenant), `read_only`,
/// `read_payloads`, `expires_in_days` ([`KEY_EXPIRY_DAYS`]; blank: never).
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
    let (read_only, read_payloads) = (form.ticked("read_only"), form.ticked("read_payloads"));
    let scope = KeyScope { tenant, read_only, read_payloads };
    let (made, secret) = state
        .operator
        .create_key(&session.caller, name, scope, expires_at)
        .await
        // A refusal names what it is about (`expires_at`); an unknown tenant is a 404 whatever
        // it is named.
        .map_err(|e| ApiError::from_operator(e, None))?;
    tracing::info!(key.id = %made.id, by = %session.key.id, "admin API key created in the console");
    render(&request, &session, &state, Some(NewKeyDoc::new(made, &secret)), None, String::new()).await
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
    render(&request, &session, &state, None, Some(doc), String::new()).await
}

//! Sessions: signing in (with a key, or a one-time link), who a request acts as, signing out.
//!
//! The cookie holds an opaque random value; only its hash is stored. It is `HttpOnly` and
//! `SameSite=Strict`; on https it is `__Host-doorman_console` (`Secure`, `Path=/`, no
//! `Domain`: no other host, and no plain-http page, can set or shadow it), on http (local
//! development) `doorman_console` with `Path=/console`. Every request looks the session up
//! with its key, so it ends at sign-out, at its expiry ([`SESSION_LIFETIME`]), and as soon as
//! its key is revoked or expires.

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use askama::Template;
use doorman_adapters::postgres::admin::keys::Presented;
use doorman_domain::{Actor, ApiKey, Caller, KeyId, RequestId};

use super::form::{Form, token_for};
use super::page::{self, Chrome};
use super::{ConsoleError, origin, see_other};
use crate::operator::problem::ApiError;
use crate::operator::query::Query;
use crate::operator::state::AdminState;

/// The session cookie's name on https: the `__Host-` prefix makes browsers refuse it unless it
/// is `Secure`, `Path=/` and has no `Domain`.
pub const HTTPS_COOKIE: &str = "__Host-doorman_console";

/// The session cookie's name on http (local development).
pub const HTTP_COOKIE: &str = "doorman_console";

/// The session cookie as the console's origin has it: its name and path.
fn cookie_for(console: &url::Origin) -> (&'static str, &'static str) {
    if origin::is_https(console) { (HTTPS_COOKIE, "/") } else { (HTTP_COOKIE, "/console") }
}

/// How long a session lasts from sign-in (a revoked or expired key ends it sooner).
pub const SESSION_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::hours(8);

/// A signed-in request: the key it acts as, and the form token of its session.
#[derive(Debug)]
pub struct Session {
    pub caller: Caller,
    pub key: ApiKey,
    csrf: String,
    /// Where the browser reached the console: its forms must come from there.
    console: url::Origin,
}

impl Session {
    /// The live session of this request's cookie, or [`ConsoleError::SignIn`].
    pub async fn of(request: &HttpRequest, state: &AdminState) -> Result<Self, ConsoleError> {
        let console = origin::of(request, &state.console);
        let Some(cookie) = request.cookie(cookie_for(&console).0) else { return Err(ConsoleError::SignIn) };
        let key = match state.sessions.resolve(cookie.value()).await {
            Ok(Some(key)) => key,
            Ok(None) => return Err(ConsoleError::SignIn),
            Err(error) => return Err(ApiError::storage(&error).into()),
        };
        let request_id = request.extensions().get::<RequestId>().cloned().unwrap_or_else(RequestId::generate);
        // The request is the key's from here on: the log line names it as the API's do.
        request
            .extensions_mut()
            .insert(Caller { actor: Actor::Key(key.clone()), request: request_id.clone() });
        Ok(Self {
            caller: Caller { actor: Actor::Key(key.clone()), request: request_id },
            csrf: token_for(cookie.value()),
            key,
            console,
        })
    }

    /// A form that changes something, checked against this session's origin and token.
    pub fn form(&self, request: &HttpRequest, body: &[u8]) -> Result<Form, ConsoleError> {
        Form::checked(request, body, &self.console, &self.csrf)
    }

    pub fn may_write(&self) -> bool {
        self.caller.actor.may_write()
    }

    /// What surrounds the page, with the notice `?done=` asks for.
    pub fn chrome(&self, request: &HttpRequest) -> Chrome {
        let done = Query::of(request).get("done").map(str::to_owned);
        Chrome {
            key_name: self.key.name.clone(),
            csrf: self.csrf.clone(),
            only_tenant: self.key.scope.tenant.map(|t| t.to_string()),
            may_write: self.may_write(),
            manage_keys: self.caller.actor.may_manage_keys(),
            notice: page::notice(done.as_deref()),
        }
    }
}

/// `/console/`: a scoped session's tenant, or the tenants.
pub async fn home(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    Ok(see_other(match session.key.scope.tenant {
        Some(tenant) => format!("/console/tenants/{tenant}"),
        None => "/console/tenants".to_owned(),
    }))
}

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    /// Why the last try failed, if it did.
    refused: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "console/sign_in_link.html")]
struct SignInLinkPage {
    refused: bool,
}

pub async fn sign_in_page() -> Result<HttpResponse, ConsoleError> {
    page::ok(&SignInPage { refused: None })
}

/// Signs in with an admin key: the same check as the API's bearer key (counted and logged the
/// same way when refused), then a session acting as it.
pub async fn sign_in(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let console = origin::of(&request, &state.console);
    let form = Form::from_this_origin(&request, &body, &console)?;
    let presented = form.get("key").unwrap_or_default();
    let refused = |reason, key: Option<KeyId>| {
        state.metrics.refused(reason);
        tracing::warn!(
            reason = doorman_domain::KeyRefusal::as_str(reason),
            key.id = key.map(tracing::field::display),
            client.address = request.peer_addr().map(|a| a.ip().to_string()),
            "console sign-in refused: no valid key"
        );
        Ok(page::html(
            actix_web::http::StatusCode::UNAUTHORIZED,
            &SignInPage { refused: Some("That key was not accepted: check it, or ask for a new one.") },
        ))
    };
    if presented.is_empty() {
        return refused(doorman_domain::KeyRefusal::Missing, None);
    }
    match state.keys.authenticate(presented).await {
        Ok(Presented::Valid(key)) => open(&request, &state, &console, key.id, "key").await,
        Ok(Presented::Refused { reason, key }) => refused(reason, key),
        Err(error) => Err(ApiError::storage(&error).into()),
    }
}

/// A sign-in link's page: a button, not a sign-in, so that a link previewer (a chat app
/// unfurling it) cannot spend it.
pub async fn link_page() -> Result<HttpResponse, ConsoleError> {
    page::ok(&SignInLinkPage { refused: false })
}

/// Spends a sign-in link: a session acting as its key.
pub async fn link_sign_in(
    request: HttpRequest,
    token: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let console = origin::of(&request, &state.console);
    Form::from_this_origin(&request, &body, &console)?;
    match state.sessions.spend_link(&token).await {
        Ok(Some(key)) => open(&request, &state, &console, key, "link").await,
        Ok(None) => {
            tracing::warn!(
                client.address = request.peer_addr().map(|a| a.ip().to_string()),
                "console sign-in link refused: unknown, spent, expired, or its key revoked"
            );
            Ok(page::html(actix_web::http::StatusCode::GONE, &SignInLinkPage { refused: true }))
        }
        Err(error) => Err(ApiError::storage(&error).into()),
    }
}

/// A new session for `key`: its cookie, and on to the console's home.
async fn open(
    request: &HttpRequest,
    state: &AdminState,
    console: &url::Origin,
    key: KeyId,
    how: &str,
) -> Result<HttpResponse, ConsoleError> {
    let expires_at = chrono::Utc::now() + SESSION_LIFETIME;
    let secret =
        state.sessions.open(key, expires_at).await.map_err(|e| ConsoleError::from(ApiError::storage(&e)))?;
    tracing::info!(key.id = %key, how, client.address = request.peer_addr().map(|a| a.ip().to_string()), "console session opened");
    let (name, path) = cookie_for(console);
    let cookie = Cookie::build(name, secret.expose().to_owned())
        .path(path)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(origin::is_https(console))
        .max_age(time::Duration::seconds(SESSION_LIFETIME.num_seconds()))
        .finish();
    let mut response = see_other("/console/");
    response
        .add_cookie(&cookie)
        .map_err(|_| ConsoleError::bad_request("could not set the session cookie"))?;
    Ok(response)
}

/// Ends the session and forgets its cookie.
pub async fn sign_out(
    request: HttpRequest,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    session.form(&request, &body)?;
    let (name, path) = cookie_for(&session.console);
    if let Some(cookie) = request.cookie(name) {
        state.sessions.end(cookie.value()).await.map_err(|e| ConsoleError::from(ApiError::storage(&e)))?;
    }
    tracing::info!(key.id = %session.key.id, "console session ended by sign-out");
    let mut response = see_other("/console/sign-in");
    let mut gone = Cookie::build(name, "").path(path).secure(origin::is_https(&session.console)).finish();
    gone.make_removal();
    response
        .add_cookie(&gone)
        .map_err(|_| ConsoleError::bad_request("could not clear the session cookie"))?;
    Ok(response)
}

//! Rendering: a page's template into an HTML answer, and what every signed-in page shows
//! around its content (who is signed in, where they may go, the sign-out form, a notice).

use std::borrow::Borrow;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;
use chrono::{DateTime, Utc};

use super::ConsoleError;

/// A rendered page; a template that fails to render (a bug) is a 500 with no detail.
pub fn html(status: StatusCode, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => HttpResponse::build(status).content_type("text/html; charset=utf-8").body(body),
        Err(error) => {
            tracing::error!(error = %error, "a console page failed to render");
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("internal error")
        }
    }
}

/// 200 with the page.
pub fn ok(page: &impl Template) -> Result<HttpResponse, ConsoleError> {
    Ok(html(StatusCode::OK, page))
}

/// Around every signed-in page.
#[derive(Debug, Clone)]
pub struct Chrome {
    /// The key the session acts as, by name.
    pub key_name: String,
    /// The form token every change posts (`csrf`).
    pub csrf: String,
    /// `Some(id)`: the session sees this tenant only.
    pub only_tenant: Option<String>,
    /// Whether the session may change anything.
    pub may_write: bool,
    /// Whether the session may manage keys (a key for every tenant, not read-only).
    pub manage_keys: bool,
    /// What the last form did, in words chosen here (never text from the request).
    pub notice: Option<&'static str>,
}

/// The notice for `?done=<word>` after a form redirected back.
pub fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "created" => "Tenant created.",
        "linked" => "Workspace linked.",
        "unlinked" => "Workspace unlinked.",
        "agent-set" => "Agent saved.",
        "paused" => "Agent paused: new events are answered 503 until it is resumed, and Slack re-sends them.",
        "resumed" => "Agent resumed.",
        "payloads-on" => "Payloads are kept for replay from now on.",
        "payloads-off" => "Payloads are no longer kept.",
        "revoked" => "Key revoked: its sessions are ended.",
        _ => return None,
    })
}

/// An instant as pages show it.
pub fn when(at: impl Borrow<DateTime<Utc>>) -> String {
    at.borrow().format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// An optional instant, or a dash.
pub fn maybe(at: impl Borrow<Option<DateTime<Utc>>>) -> String {
    at.borrow().as_ref().map(when).unwrap_or_else(|| "—".into())
}

//! Installing the Slack app, as a customer's browser sees it: an install link sends it to
//! Slack, Slack sends it back. Handlers convert (path, query, cookie → the use case's inputs;
//! its outcome → a page); the rules are in `doorman_domain::usecases::install`.

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, LOCATION};
use actix_web::{HttpRequest, HttpResponse, web};
use doorman_domain::usecases::install::{Callback, Finish, STATE_LIFETIME, Start};
use doorman_domain::{OAuthError, StateRefusal};
use serde::Deserialize;

use super::{AppState, InstallFlow};

/// The cookie that binds a started install to the browser that started it. Only its path
/// back from Slack needs it.
const COOKIE: &str = "doorman_install";
const COOKIE_PATH: &str = "/slack/oauth";

fn flow(state: &AppState) -> Option<&InstallFlow> {
    state.installs.as_deref()
}

/// `GET /slack/install/{token}`: a fresh state, a cookie, and off to Slack.
pub async fn start(token: web::Path<String>, state: web::Data<AppState>) -> HttpResponse {
    let Some(flow) = flow(&state) else { return installs_off() };
    match flow.installs.start(&token).await {
        Start::Begin(opened) => {
            let settings = &flow.settings;
            let Ok(location) =
                settings.app.authorize_link(&settings.authorize_url, &settings.scopes, &opened.state)
            else {
                tracing::error!("DOORMAN_SLACK_AUTHORIZE_URL is not a URL");
                return page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Installs are misconfigured",
                    "Please tell the platform's operators.",
                );
            };
            let cookie = Cookie::build(COOKIE, opened.browser)
                .path(COOKIE_PATH)
                .http_only(true)
                // Lax: sent on the top-level redirect back from Slack, not on cross-site
                // requests of any other kind.
                .same_site(SameSite::Lax)
                .secure(settings.secure_cookies())
                .max_age(CookieDuration::seconds(STATE_LIFETIME.as_secs() as i64))
                .finish();
            state.metrics.install("started");
            HttpResponse::Found()
                .insert_header((LOCATION, location))
                .insert_header((CACHE_CONTROL, "no-store"))
                .cookie(cookie)
                .finish()
        }
        Start::UnknownLink => page(
            StatusCode::NOT_FOUND,
            "Unknown install link",
            "This link does not exist. Ask for a new one.",
        ),
        Start::ExpiredLink => page(StatusCode::GONE, "This install link has expired", "Ask for a new one."),
        Start::Unavailable(error) => {
            tracing::error!(error = %error, "install link could not be looked up");
            unavailable()
        }
    }
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /slack/oauth/callback?code=…&state=…` (or `?error=access_denied&state=…`).
pub async fn callback(
    request: HttpRequest,
    query: web::Query<CallbackQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let Some(flow) = flow(&state) else { return installs_off() };
    let query = query.into_inner();
    let callback = match (query.code, query.error) {
        (_, Some(error)) => Callback::Denied(error),
        (Some(code), None) => Callback::Code(code),
        (None, None) => {
            return page(
                StatusCode::BAD_REQUEST,
                "Not an install",
                "This address is where Slack sends you back during an install.",
            );
        }
    };
    let browser = request.cookie(COOKIE).map(|c| c.value().to_owned());
    let finish = flow.installs.finish(query.state.as_deref(), browser.as_deref(), callback).await;
    let (label, response) = answer(&finish);
    state.metrics.install(label);
    let mut response = response;
    // The state is spent either way; the cookie has done its work.
    let mut spent = Cookie::build(COOKIE, "").path(COOKIE_PATH).finish();
    spent.make_removal();
    let _ = response.add_removal_cookie(&spent);
    response
}

fn answer(finish: &Finish) -> (&'static str, HttpResponse) {
    match finish {
        Finish::Installed { tenant, tenant_name, workspace_name, workspace, app_id, again } => {
            tracing::info!(tenant.id = %tenant, workspace = %workspace_name, again, "Slack app installed");
            // As Bolt's default page does: a link that opens the app in Slack, and Slack on
            // the web as a fallback. The team, or an org-wide install's enterprise.
            let team = workspace.team_id().or(workspace.enterprise_id()).map(|id| query(id.as_str()));
            let open = team.map_or_else(String::new, |team| {
                format!(
                    " <a href=\"slack://app?team={team}&amp;id={}\">Open it in Slack</a>, or \
                     <a href=\"https://app.slack.com/client/{team}\">Slack in your browser</a>. \
                     You can close this tab.",
                    query(app_id)
                )
            });
            let message = format!(
                "Slack workspace “{}” is connected to {}.{}{open}",
                escape(workspace_name),
                escape(tenant_name),
                if *again { " The installation was updated." } else { "" }
            );
            ("installed", page(StatusCode::OK, "Installed", &message))
        }
        Finish::Taken { workspace_name } => (
            "taken",
            page(
                StatusCode::CONFLICT,
                "Already connected elsewhere",
                &format!(
                    "Slack workspace “{}” is connected to another customer here. Nothing was changed.",
                    escape(workspace_name)
                ),
            ),
        ),
        Finish::Cancelled { tenant_name } => (
            "cancelled",
            page(
                StatusCode::OK,
                "Install cancelled",
                &format!("Nothing was installed for {}.", escape(tenant_name)),
            ),
        ),
        Finish::Refused(why) => {
            let reason = match why {
                StateRefusal::Missing => {
                    "This install was not started in this browser, or its cookie is gone."
                }
                StateRefusal::Unknown => "This install is unknown.",
                StateRefusal::Expired => "This install took longer than ten minutes.",
                StateRefusal::Used => "This install has already been completed.",
                StateRefusal::OtherBrowser => "This install was started in another browser.",
            };
            (
                "refused",
                page(
                    StatusCode::BAD_REQUEST,
                    "Install not accepted",
                    &format!("{reason} Start again from your install link."),
                ),
            )
        }
        Finish::SlackFailed(error) => {
            tracing::warn!(error = %error, "Slack did not grant an install");
            let code = match error {
                OAuthError::Refused(code) => escape(code),
                OAuthError::Unreachable(_) => "unreachable".into(),
            };
            (
                "slack_failed",
                page(
                    StatusCode::BAD_GATEWAY,
                    "Slack did not complete the install",
                    &format!("Slack answered: <code>{code}</code>. Nothing was installed."),
                ),
            )
        }
        Finish::Unavailable(error) => {
            tracing::error!(error = %error, "install could not be completed: database unavailable");
            ("unavailable", unavailable())
        }
    }
}

fn installs_off() -> HttpResponse {
    page(StatusCode::NOT_FOUND, "Not found", "Installs are not enabled here.")
}

fn unavailable() -> HttpResponse {
    page(StatusCode::SERVICE_UNAVAILABLE, "Please try again", "The install could not be completed right now.")
}

/// A small HTML page; `message` is HTML already escaped by the caller.
fn page(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'"))
        .body(format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
             <style>body{{font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em}}</style>\
             </head><body><h1>{title}</h1><p>{message}</p></body></html>",
            title = escape(title)
        ))
}

/// An id from Slack as it may stand in a URL: its letters and digits only (Slack's ids are
/// upper-case letters and digits), so nothing it sent can break out of the attribute.
fn query(id: &str) -> String {
    id.chars().filter(char::is_ascii_alphanumeric).collect()
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn names_from_slack_cannot_write_html() {
        assert_eq!(escape("<script>\"x\" & 'y'"), "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;");
    }
}

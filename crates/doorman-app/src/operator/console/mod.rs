//! The operator console (`/console/` of `doorman admin serve`): server-rendered pages over the
//! same operator use cases as the admin API and the command line, so the same rules hold
//! (a scoped key sees one tenant, a read-only key changes nothing) and every change lands in
//! the same audit trail. A support person signs in with a key for every tenant; a customer
//! with a one-time link made for a key scoped to their tenant.
//!
//! The browser never holds a key: it holds a session ([`session`]), an opaque id in an
//! `HttpOnly`, `SameSite=Strict` cookie (`__Host-` on https), checked against its key on every
//! request. Every form that changes something comes from the console's own origin
//! ([`origin`]) and carries a token derived from the session ([`form`]), and every page
//! is sent with a strict Content-Security-Policy ([`secure_headers`]): scripts and styles only
//! from `/console/assets/`, nothing inline, nothing from another origin.

mod admin_pages;
mod assets;
mod charts;
mod error;
mod events;
mod form;
mod origin;
mod overview;
mod page;
mod session;
mod tenants;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpResponse, web};

pub use admin_pages::PICKER_SIZE;
pub use error::ConsoleError;

/// What every console page answers with: only this origin's scripts, styles and images,
/// forms posted only here, never framed, no `<base>` games.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A console route answering one method (405 with `Allow` for the others).
macro_rules! page {
    ($path:literal, $($method:ident => $handler:path),+ $(,)?) => {{
        let allow: &'static str = concat!($(stringify!($method), ", "),+).trim_end_matches(", ");
        web::resource($path)
            $(.route(web::method(actix_web::http::Method::$method).to($handler)))+
            .default_service(web::to(move || async move { ConsoleError::not_allowed(allow) }))
    }};
}

pub fn routes(config: &mut web::ServiceConfig) {
    config.service(
        web::scope("/console")
            .wrap(from_fn(secure_headers))
            .app_data(web::PayloadConfig::new(form::MAX_FORM_BYTES))
            .service(page!("", GET => session::home))
            .service(page!("/", GET => session::home))
            .service(page!("/assets/{name}", GET => assets::serve))
            .service(page!("/sign-in", GET => session::sign_in_page, POST => session::sign_in))
            .service(page!("/sign-in/{token}", GET => session::link_page, POST => session::link_sign_in))
            .service(page!("/sign-out", POST => session::sign_out))
            .service(page!("/overview", GET => overview::show))
            .service(page!("/tenants", GET => tenants::list, POST => tenants::create))
            .service(page!("/tenants/{id}", GET => tenants::show))
            .service(page!("/tenants/{id}/rename", POST => tenants::rename))
            .service(page!("/tenants/{id}/delete", GET => tenants::delete_page, POST => tenants::delete))
            .service(page!("/tenants/{id}/workspaces", POST => tenants::link_workspace))
            .service(page!("/tenants/{id}/workspaces/{workspace}/unlink", POST => tenants::unlink_workspace))
            .service(page!("/tenants/{id}/agent", POST => tenants::set_agent))
            .service(page!("/tenants/{id}/agent/pause", POST => tenants::pause_agent))
            .service(page!("/tenants/{id}/agent/resume", POST => tenants::resume_agent))
            .service(page!("/tenants/{id}/retain-payloads", POST => tenants::retain_payloads))
            .service(page!("/tenants/{id}/redelivery", POST => tenants::redelivery))
            .service(page!("/tenants/{id}/read-only-portals-read-payloads", POST => tenants::read_only_portals_read_payloads))
            .service(page!("/tenants/{id}/install-links", POST => tenants::install_link))
            .service(page!("/events", GET => events::find))
            .service(page!("/tenants/{id}/events", GET => events::list))
            .service(page!("/tenants/{id}/events/{event}", GET => events::show))
            .service(page!("/tenants/{id}/events/{event}/replay", POST => events::replay_one))
            .service(page!("/tenants/{id}/replays", GET => events::jobs, POST => events::replay_selected))
            .service(page!("/tenants/{id}/replays/preview", POST => events::replay_preview))
            .service(page!("/tenants/{id}/replays/{job}", GET => events::job))
            .service(page!("/audit", GET => admin_pages::audit))
            .service(page!("/keys", GET => admin_pages::keys, POST => admin_pages::create_key))
            .service(page!("/keys/{key}/revoke", POST => admin_pages::revoke_key))
            .service(page!("/keys/{key}/sign-in-link", POST => admin_pages::sign_in_link))
            .default_service(web::to(|| async {
                HttpResponse::from_error(ConsoleError::not_found("no such page"))
            })),
    );
}

/// On every console answer: the CSP, no framing, no sniffing, no `Referer` to another site (a sign-in link's
/// token is in its path; `no-referrer` would make browsers send `Origin: null` with the
/// console's own forms), and nothing cached (pages show a tenant's data to one session).
async fn secure_headers(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut response = next.call(request).await?;
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 5] = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in fixed {
        if !(name == header::CACHE_CONTROL && headers.contains_key(&name)) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    Ok(response)
}

/// 303 to `location` (after a form: the browser then GETs the page).
pub(crate) fn see_other(location: impl Into<String>) -> HttpResponse {
    HttpResponse::SeeOther().insert_header((header::LOCATION, location.into())).finish()
}

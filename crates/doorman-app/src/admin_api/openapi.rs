//! The admin API's OpenAPI 3.1 document, generated from the handlers' annotations and the
//! documents' types (utoipa). Served at `GET /admin/v1/openapi.json` and committed as
//! `docs/admin-api.json` (a test fails when the committed copy is stale).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::problem::Problem;
use super::{agents, audit, events, installs, tenants, workspaces};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Doorman admin API",
        version = "1",
        description = "Onboard tenants, link their Slack workspaces, set their agents, hand out install links, \
                       and ask what became of their events. Every request carries `Authorization: Bearer dmk_…`; \
                       errors are RFC 9457 problem details. See docs/admin-api.md."
    ),
    paths(
        tenants::create,
        tenants::list,
        tenants::get,
        tenants::retain_payloads,
        workspaces::list,
        workspaces::link,
        workspaces::unlink,
        agents::get,
        agents::set,
        agents::pause,
        agents::resume,
        installs::create_link,
        installs::list,
        installs::remove,
        events::get,
        events::list,
        events::replay_one,
        events::replay_many,
        audit::list,
    ),
    components(schemas(Problem)),
    modifiers(&BearerKeys),
    tags(
        (name = "tenants", description = "The platform's customers"),
        (name = "workspaces", description = "Which Slack workspaces a tenant's events come from"),
        (name = "agents", description = "Where a tenant's events are dispatched"),
        (name = "installations", description = "The Slack app installed by a tenant's customers"),
        (name = "events", description = "What became of events, and replays"),
        (name = "audit", description = "Every change, by whom"),
    )
)]
#[derive(Debug)]
pub struct AdminApi;

/// `Authorization: Bearer dmk_…` on every operation that declares it.
struct BearerKeys;

impl Modify for BearerKeys {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("dmk_<id>_<secret>")
                    .description(Some("An admin API key from `doorman admin keys create`"))
                    .build(),
            ),
        );
    }
}

/// The document as JSON, pretty-printed (the committed copy is this text).
pub fn document() -> String {
    let mut text = AdminApi::openapi().to_pretty_json().unwrap_or_default();
    text.push('\n');
    text
}

//! The admin API's OpenAPI 3.1 document, generated from the handlers' annotations and the
//! documents' types (utoipa). Served at `GET /admin/v1/openapi.json` and committed as
//! `docs/admin-api.json` (a test fails when the committed copy is stale).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{activity, agents, audit, events, installs, keys, replays, tenants, workspaces};
use crate::operator::problem::{PROBLEM_JSON, Problem};

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
        tenants::rename,
        tenants::delete,
        tenants::retain_payloads,
        tenants::redelivery,
        tenants::read_only_portals_read_payloads,
        workspaces::list,
        workspaces::link,
        workspaces::unlink,
        agents::get,
        agents::set,
        agents::pause,
        agents::resume,
        agents::remove,
        installs::create_link,
        installs::list,
        installs::remove,
        events::get,
        events::list,
        events::find,
        activity::get,
        activity::overview,
        replays::replay_one,
        replays::replay_many,
        replays::list,
        replays::get,
        audit::list,
        keys::create,
        keys::list,
        keys::get,
        keys::revoke,
        keys::sign_in_link,
    ),
    servers(
        (url = "http://127.0.0.1:3001", description = "`doorman admin serve` on its default address (`DOORMAN_ADMIN_BIND`)"),
    ),
    components(schemas(Problem)),
    modifiers(&BearerKeys, &CommonAnswers, &Links, &Cursors),
    tags(
        (name = "tenants", description = "The platform's customers"),
        (name = "workspaces", description = "Which Slack workspaces a tenant's events come from"),
        (name = "agents", description = "Where a tenant's events are dispatched"),
        (name = "installations", description = "The Slack app installed by a tenant's customers"),
        (name = "events", description = "What became of events"),
        (name = "replays", description = "Sending kept events again, as jobs"),
        (name = "audit", description = "Every change, by whom"),
        (name = "keys", description = "Admin API keys (a key for every tenant, not read-only, manages them)"),
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

/// What every operation may answer besides its own responses, said once: `X-Request-Id` on
/// every answer, `WWW-Authenticate` on a 401, and a 503 (with `Retry-After`) when the database
/// is unavailable.
struct CommonAnswers;

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::Header;
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};

        let header = |kind: utoipa::openapi::Type, description: &str| {
            let mut header = Header::new(utoipa::openapi::ObjectBuilder::new().schema_type(kind));
            header.description = Some(description.to_owned());
            header
        };
        let string = |description: &str| header(utoipa::openapi::Type::String, description);
        for item in openapi.paths.paths.values_mut() {
            for operation in [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch]
                .into_iter()
                .flatten()
            {
                let responses = &mut operation.responses.responses;
                responses.entry("503".to_owned()).or_insert_with(|| {
                    RefOr::T(
                        ResponseBuilder::new()
                            .description("The database is unavailable; try again (`Retry-After`).")
                            .content(
                                PROBLEM_JSON,
                                ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem"))).build(),
                            )
                            .build(),
                    )
                });
                for (status, response) in responses.iter_mut() {
                    let RefOr::T(response) = response else { continue };
                    response.headers.insert(
                        "X-Request-Id".to_owned(),
                        string("The request's id: the client's, if it sent a printable one of up to 128 characters, else a fresh one. Recorded in the audit trail."),
                    );
                    match status.as_str() {
                        "401" => {
                            response.headers.insert(
                                "WWW-Authenticate".to_owned(),
                                string("`Bearer`: send an admin API key."),
                            );
                        }
                        "503" => {
                            response.headers.insert(
                                "Retry-After".to_owned(),
                                header(
                                    utoipa::openapi::Type::Integer,
                                    "Seconds to wait before trying again.",
                                ),
                            );
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// How one answer leads to the next request: a created tenant's id to its routes, a linked
/// workspace to its unlinking, a made key to reading and revoking it, a replay to its job, a
/// page to the next. Generators document them; Schemathesis's stateful phase follows them.
struct Links;

/// One link: from an operation's answer (its status), by name, to an operation, with that
/// operation's parameters as runtime expressions.
struct Link {
    from: &'static str,
    status: &'static str,
    name: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
}

const fn link(
    from: &'static str,
    status: &'static str,
    name: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
) -> Link {
    Link { from, status, name, to, parameters }
}

const LINKS: &[Link] = &[
    link("createTenant", "201", "tenant", "getTenant", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "rename", "renameTenant", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "workspaces", "listWorkspaces", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "link", "linkWorkspace", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "agent", "getAgent", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "setAgent", "setAgent", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "events", "listEvents", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "replays", "listReplayJobs", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "installLink", "createInstallLink", &[("id", "$response.body#/id")]),
    link("createTenant", "201", "delete", "deleteTenant", &[("id", "$response.body#/id")]),
    link(
        "linkWorkspace",
        "201",
        "unlink",
        "unlinkWorkspace",
        &[("id", "$request.path.id"), ("workspace_id", "$response.body#/team_id")],
    ),
    link("setAgent", "200", "pause", "pauseAgent", &[("id", "$request.path.id")]),
    link("setAgent", "200", "remove", "removeAgent", &[("id", "$request.path.id")]),
    link("createKey", "201", "key", "getKey", &[("key_id", "$response.body#/id")]),
    link("createKey", "201", "revoke", "revokeKey", &[("key_id", "$response.body#/id")]),
    link(
        "replayEvents",
        "202",
        "job",
        "getReplayJob",
        &[("id", "$request.path.id"), ("job_id", "$response.body#/id")],
    ),
    link(
        "replayEvent",
        "202",
        "job",
        "getReplayJob",
        &[("id", "$request.path.id"), ("job_id", "$response.body#/id")],
    ),
    link("listTenants", "200", "next", "listTenants", &[("cursor", "$response.body#/next_cursor")]),
    link("listAuditEntries", "200", "next", "listAuditEntries", &[("cursor", "$response.body#/next_cursor")]),
    link(
        "listReplayJobs",
        "200",
        "next",
        "listReplayJobs",
        &[("id", "$request.path.id"), ("cursor", "$response.body#/next_cursor")],
    ),
    link(
        "listEvents",
        "200",
        "next",
        "listEvents",
        &[
            ("id", "$request.path.id"),
            ("state", "$request.query.state"),
            ("cursor", "$response.body#/next_cursor"),
        ],
    ),
];

impl Modify for Links {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::link::LinkBuilder;

        for item in openapi.paths.paths.values_mut() {
            for operation in [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch]
                .into_iter()
                .flatten()
            {
                let Some(id) = operation.operation_id.clone() else { continue };
                for Link { status, name, to, parameters, .. } in LINKS.iter().filter(|link| link.from == id) {
                    let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status) else {
                        continue;
                    };
                    let link = parameters
                        .iter()
                        .fold(LinkBuilder::new().operation_id(*to), |link, (param, value)| {
                            link.parameter(*param, *value)
                        });
                    response.links.insert((*name).to_owned(), RefOr::T(link.build()));
                }
            }
        }
    }
}

/// Each listing's `cursor` parameter has its cursors' pattern (or is empty: the first page),
/// so what the schema allows is what the listing takes: the pattern is the domain's, which
/// writes and reads the cursors (`Cursor::pattern`).
struct Cursors;

/// The listings (by operationId) and the pattern of their cursors.
fn cursor_patterns() -> [(&'static str, String); 4] {
    use doorman_domain::{AuditCursor, Cursor, EventCursor, JobCursor, TenantCursor};
    [
        ("listTenants", TenantCursor::pattern()),
        ("listEvents", EventCursor::pattern()),
        ("listReplayJobs", JobCursor::pattern()),
        ("listAuditEntries", AuditCursor::pattern()),
    ]
}

impl Modify for Cursors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::Schema;

        let patterns = cursor_patterns();
        for item in openapi.paths.paths.values_mut() {
            for operation in [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch]
                .into_iter()
                .flatten()
            {
                let Some((_, pattern)) =
                    patterns.iter().find(|(id, _)| operation.operation_id.as_deref() == Some(*id))
                else {
                    continue;
                };
                let cursor = operation.parameters.iter_mut().flatten().find(|p| p.name == "cursor");
                if let Some(RefOr::T(Schema::Object(schema))) = cursor.and_then(|p| p.schema.as_mut()) {
                    schema.pattern = Some(format!("^$|{pattern}"));
                }
            }
        }
    }
}

/// The document as JSON, pretty-printed (the committed copy is this text).
pub fn document() -> String {
    let mut document = serde_json::to_value(AdminApi::openapi()).unwrap_or_default();
    links_in_the_specs_words(&mut document);
    optional_bodies_are_left_out_not_null(&mut document);
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

/// utoipa 5.5 writes a link's fields in Rust's words (`operation_id`); OpenAPI's are
/// `operationId`, `operationRef`, `requestBody`, and a validator refuses the others.
fn links_in_the_specs_words(document: &mut serde_json::Value) {
    let Some(paths) = document.get_mut("paths").and_then(|p| p.as_object_mut()) else { return };
    let links = paths
        .values_mut()
        .filter_map(|ops| ops.as_object_mut())
        .flat_map(|ops| ops.values_mut())
        .filter_map(|op| op.get_mut("responses").and_then(|r| r.as_object_mut()))
        .flat_map(|responses| responses.values_mut())
        .filter_map(|response| response.get_mut("links").and_then(|l| l.as_object_mut()))
        .flat_map(|links| links.values_mut())
        .filter_map(|link| link.as_object_mut());
    for link in links {
        for (rust, spec) in [
            ("operation_id", "operationId"),
            ("operation_ref", "operationRef"),
            ("request_body", "requestBody"),
        ] {
            if let Some(value) = link.remove(rust) {
                link.insert(spec.to_owned(), value);
            }
        }
    }
}

/// utoipa writes an optional body (`Option<T>`) as `oneOf: [null, T]`, so a generated client
/// (openapi-python-client) types it "`T`, `None` or unset" and sends its unset marker as JSON,
/// which fails. An optional body is one that may be left out, not one that may be `null`: the
/// schema is `T` alone, and the request body is not `required`.
fn optional_bodies_are_left_out_not_null(document: &mut serde_json::Value) {
    let Some(paths) = document.get_mut("paths").and_then(|p| p.as_object_mut()) else { return };
    let schemas = paths
        .values_mut()
        .filter_map(|ops| ops.as_object_mut())
        .flat_map(|ops| ops.values_mut())
        .filter_map(|op| op.get_mut("requestBody"))
        .filter(|body| body.get("required").and_then(|r| r.as_bool()) != Some(true))
        .filter_map(|body| body.get_mut("content").and_then(|c| c.as_object_mut()))
        .flat_map(|content| content.values_mut())
        .filter_map(|media| media.get_mut("schema"));
    for schema in schemas {
        let Some(choices) = schema.get("oneOf").and_then(|c| c.as_array()) else { continue };
        let not_null: Vec<&serde_json::Value> = choices
            .iter()
            .filter(|choice| choice.get("type").and_then(|t| t.as_str()) != Some("null"))
            .collect();
        if let [only] = not_null[..] {
            *schema = only.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generators that do not group operations by tag name a client's methods after the
    /// operationIds, and OpenAPI requires them unique: each is the operation's own name
    /// (`listTenants`, `getEvent`), lower camel case as generators expect.
    #[test]
    fn every_operation_has_its_own_camel_case_operation_id() {
        let document: serde_json::Value = serde_json::from_str(&document()).expect("the document is JSON");
        let mut ids = Vec::new();
        for (path, operations) in document["paths"].as_object().expect("paths") {
            for (method, operation) in operations.as_object().expect("operations") {
                let id = operation["operationId"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
                assert!(
                    id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && id.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{method} {path}: `{id}` is not lower camel case"
                );
                ids.push(id.to_owned());
            }
        }
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count, "operationIds repeat: {ids:?}");
        assert_eq!(count, 34, "every operation of the document is checked");
    }

    /// Every `cursor` parameter states its listing's pattern: a listing added without one
    /// would let generated cursors in that it refuses.
    #[test]
    fn every_cursor_parameter_has_its_listings_pattern() {
        let parsed: serde_json::Value = serde_json::from_str(&document()).expect("the document is JSON");
        let mut described = Vec::new();
        for operations in parsed["paths"].as_object().unwrap().values() {
            for operation in operations.as_object().unwrap().values() {
                let parameters = operation["parameters"].as_array().into_iter().flatten();
                for cursor in parameters.filter(|p| p["name"] == "cursor") {
                    let id = operation["operationId"].as_str().unwrap();
                    let (_, pattern) =
                        cursor_patterns().into_iter().find(|(listing, _)| *listing == id).unwrap();
                    assert_eq!(cursor["schema"]["pattern"], format!("^$|{pattern}"), "{id}");
                    described.push(id.to_owned());
                }
            }
        }
        described.sort();
        assert_eq!(described, ["listAuditEntries", "listEvents", "listReplayJobs", "listTenants"]);
    }

    /// The event type a listing is filtered by is described as the domain takes it.
    #[test]
    fn the_event_type_filter_has_the_domains_pattern() {
        let parsed: serde_json::Value = serde_json::from_str(&document()).expect("the document is JSON");
        let parameters =
            parsed["paths"]["/admin/v1/tenants/{id}/events"]["get"]["parameters"].as_array().unwrap();
        let kind = parameters.iter().find(|p| p["name"] == "type").expect("a type parameter");
        assert_eq!(kind["schema"]["pattern"], doorman_domain::EventType::PATTERN);
    }

    /// No request body may be sent as `null`: an optional one is left out (see
    /// `optional_bodies_are_left_out_not_null`).
    #[test]
    fn no_request_body_is_declared_as_possibly_null() {
        let document = document();
        let parsed: serde_json::Value = serde_json::from_str(&document).expect("the document is JSON");
        let replay =
            &parsed["paths"]["/admin/v1/tenants/{id}/events/{event_id}/replay"]["post"]["requestBody"];
        assert_eq!(replay["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ReplayOne");
        assert!(replay.get("required").is_none(), "optional: {replay}");
        for (path, operations) in parsed["paths"].as_object().unwrap() {
            for (method, operation) in operations.as_object().unwrap() {
                let body = operation.get("requestBody").map(ToString::to_string).unwrap_or_default();
                assert!(!body.contains("\"null\""), "{method} {path} takes a null body: {body}");
            }
        }
    }

    /// Each link starts at an operation and status the document has, and leads to one it has.
    #[test]
    fn every_link_joins_two_operations_of_the_document() {
        let document: serde_json::Value = serde_json::from_str(&document()).expect("the document is JSON");
        let ids: Vec<&str> = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|ops| ops.as_object().unwrap().values())
            .filter_map(|op| op["operationId"].as_str())
            .collect();
        let mut placed = 0;
        for ops in document["paths"].as_object().unwrap().values() {
            for op in ops.as_object().unwrap().values() {
                for response in op["responses"].as_object().unwrap().values() {
                    for link in response["links"].as_object().into_iter().flat_map(|links| links.values()) {
                        let to = link["operationId"].as_str().unwrap();
                        assert!(ids.contains(&to), "a link to {to}, which the document does not have");
                        placed += 1;
                    }
                }
            }
        }
        assert_eq!(placed, LINKS.len(), "every link found its operation and status");
    }
}

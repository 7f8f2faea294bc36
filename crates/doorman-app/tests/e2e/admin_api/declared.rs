//! The contract from the other side: every status the server answers is one the served
//! OpenAPI document declares for that operation, whichever kind of key asks (for every tenant
//! or scoped to one, read-write or read-only), and every 201 carries the `Location` the
//! document declares for it.

use doorman_testkit::database::TestDatabase;
use reqwest::Method;
use serde_json::{Value, json};

use super::{Admin, answer, key};
use crate::helpers::AGENT_SECRET;

/// The bodies each operation is sent, by operationId: one it takes, then values it refuses
/// (none: no body). A new operation must be added here: the test refuses one it has no entry
/// for.
fn bodies_of(operation: &str) -> Option<Vec<Option<Value>>> {
    let agent = |url: &str| Some(json!({"url": url, "signing_secret": AGENT_SECRET}));
    Some(match operation {
        "createTenant" => vec![Some(json!({"name": "Declared"})), Some(json!({"name": " "}))],
        "renameTenant" => vec![Some(json!({"name": "Declared Ltd"})), Some(json!({"name": " "}))],
        "setRetainPayloads" => vec![Some(json!({"enabled": true}))],
        "setReadOnlyPortalsReadPayloads" => {
            vec![Some(json!({"enabled": true})), Some(json!({"enabled": "yes"}))]
        }
        "setRedelivery" => vec![
            Some(json!({"enabled": true, "schedule": "5s,5m"})),
            Some(json!({"enabled": true, "schedule": "5x"})),
        ],
        "linkWorkspace" => vec![Some(json!({"team_id": "TDECLARED2"})), Some(json!({}))],
        "setAgent" => vec![agent("http://127.0.0.1:9/agent"), agent("ftp://agent.example/x")],
        "createInstallLink" => vec![Some(json!({})), Some(json!({"expires_in_seconds": 5}))],
        "replayEvent" => vec![Some(json!({})), None],
        "replayEvents" => vec![Some(json!({"stranded": true})), Some(json!({"failed_since": "garbage"}))],
        "createKey" => {
            vec![Some(json!({"name": "declared"})), Some(json!({"name": "x", "expires_in_seconds": 5}))]
        }
        "listTenants" | "getTenant" | "deleteTenant" | "listWorkspaces" | "unlinkWorkspace" | "getAgent"
        | "pauseAgent" | "resumeAgent" | "removeAgent" | "listInstallations" | "removeInstallation"
        | "getEvent" | "listEvents" | "listReplayJobs" | "getReplayJob" | "listAuditEntries" | "listKeys"
        | "getKey" | "revokeKey" | "createSignInLink" | "findEvents" | "getActivity" | "getOverview" => {
            vec![None]
        }
        _ => return None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_answered_to_every_kind_of_key_is_declared_in_the_served_document() {
    let db = TestDatabase::create().await;
    // The console's address is known, so sign-in links are made (and their 201 seen).
    let admin = Admin::start(
        &db,
        &["--agent-allow-private", "true", "--console-url", "https://console.doorman.example"],
    )
    .await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Declared").await;
    let t = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&t("/workspaces"), &root, json!({"team_id": "TDECLARED"})).await.status, 201);
    let job = admin.post(&t("/events/EvDeclared/replay"), &root, json!({})).await;
    assert_eq!(job.status, 202, "{job:?}");
    let job = job.body["id"].as_str().unwrap().to_owned();
    let portal = admin.post("/admin/v1/keys", &root, json!({"name": "portal", "tenant_id": tenant})).await;
    let portal = portal.body["id"].as_str().unwrap().to_owned();
    let document = admin.call(Method::GET, "/admin/v1/openapi.json", None, None).await.body;

    // The operations in the document's order, the key's revocation and the tenant's deletion
    // last (they end what the others use).
    let mut operations: Vec<(Method, String, Value)> = Vec::new();
    for (path, methods) in document["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let path = path
                .replace("{id}", &tenant)
                .replace("{workspace_id}", "TDECLARED")
                .replace("{event_id}", "EvDeclared")
                .replace("{job_id}", &job)
                .replace("{key_id}", &portal);
            operations.push((method, path, operation.clone()));
        }
    }
    operations.sort_by_key(|(_, _, op)| {
        ["revokeKey", "deleteTenant"].iter().position(|last| op["operationId"] == *last)
    });

    // Each kind of key, the most powerful last: its changes (a deletion) come after the others.
    let kinds = [
        ("scoped read-only", key(&db, Some(&tenant), true).await),
        ("scoped read-write", key(&db, Some(&tenant), false).await),
        ("every tenant, read-only", key(&db, None, true).await),
        ("every tenant, read-write", key(&db, None, false).await),
    ];
    let mut undeclared = Vec::new();
    let mut asked = 0;
    let mut created = std::collections::BTreeSet::new();
    for (kind, presented) in &kinds {
        for (method, path, operation) in &operations {
            let id = operation["operationId"].as_str().unwrap();
            let bodies = bodies_of(id).unwrap_or_else(|| panic!("no body listed for {id}"));
            asked += 1;
            for body in bodies {
                let query = match id {
                    "listEvents" => "?state=failed",
                    "findEvents" => "?event_id=EvDeclared",
                    _ => "",
                };
                let mut request = admin.http.request(method.clone(), format!("{}{path}{query}", admin.base));
                request = request.bearer_auth(presented);
                if let Some(body) = body {
                    request = request.json(&body);
                }
                let response = request.send().await.unwrap();
                let location = response.headers().get("location").is_some();
                let answered = answer(response).await;
                let status = answered.status.as_str().to_owned();
                let Some(declared) = operation["responses"].get(&status) else {
                    undeclared
                        .push(format!("{kind}: {id} answered {status}, not declared: {}", answered.body));
                    continue;
                };
                if status == "201" {
                    created.insert(id.to_owned());
                    if declared["headers"].get("Location").is_none() {
                        undeclared.push(format!("{kind}: {id}'s 201 declares no Location"));
                    }
                    if !location {
                        undeclared.push(format!("{kind}: {id}'s 201 carried no Location"));
                    }
                }
            }
        }
    }
    assert_eq!(asked, 4 * 34, "every operation, for every kind of key");
    assert_eq!(
        created.into_iter().collect::<Vec<_>>(),
        ["createInstallLink", "createKey", "createSignInLink", "createTenant", "linkWorkspace"],
        "every operation that creates was seen creating"
    );
    assert!(undeclared.is_empty(), "answers the document does not declare:\n{}", undeclared.join("\n"));
}

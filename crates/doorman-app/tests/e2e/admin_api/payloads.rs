//! Keys that read payloads, and what an event's document shows them, over HTTP and the
//! command line. Keys: made with `read_payloads` (off unless asked for), listed with it,
//! audited as such, a read-only portal's too. Documents: the request Doorman sent the event's
//! agent (the agent as it is now, the signature redacted) for every key, and the kept payload
//! only for a key allowed to read it (a read-only portal's only while its tenant allows it).
//! Events are real ones: signed Slack deliveries to a real `doorman serve`, failed by a real
//! agent so their payloads stay kept.

use doorman_testkit::FakeAgent;
use doorman_testkit::database::TestDatabase;
use serde_json::{Value, json};

use super::{Admin, key, problem};
use crate::helpers::{AGENT_SECRET, doorman, http_client, ok, post_event, serve_config};

/// The headers Doorman writes, in order (`bridge::request`): the document's list.
const HEADERS: [&str; 7] = [
    "host",
    "user-agent",
    "content-type",
    "content-length",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
];

/// A key made over the API by `root`; its secret.
pub(super) async fn made(admin: &Admin, root: &str, body: Value) -> String {
    let made = admin.post("/admin/v1/keys", root, body).await;
    assert_eq!(made.status, 201, "{made:?}");
    made.body["key"].as_str().unwrap().to_owned()
}

/// A tenant with a workspace and the agent at `agent`, keeping payloads if `keep`.
pub(super) async fn tenant(
    admin: &Admin,
    root: &str,
    name: &str,
    team: &str,
    agent: &str,
    keep: bool,
) -> String {
    let tenant = admin.tenant(root, name).await;
    let path = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&path("/workspaces"), root, json!({"team_id": team})).await.status, 201);
    let set = admin.put(&path("/agent"), root, json!({"url": agent, "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(admin.put(&path("/retain-payloads"), root, json!({"enabled": keep})).await.status, 200);
    tenant
}

/// Reads the event until it is `status`; its document.
pub(super) async fn until(admin: &Admin, key: &str, tenant: &str, event: &str, status: &str) -> Value {
    let path = format!("/admin/v1/tenants/{tenant}/events/{event}");
    let deadline = tokio::time::Instant::now() + crate::helpers::WAIT;
    loop {
        let read = admin.get(&path, key).await;
        if read.status == 200 && read.body["status"] == status {
            return read.body;
        }
        assert!(tokio::time::Instant::now() < deadline, "{event} never {status}: {read:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The request's headers as (name, value, redacted).
fn headers(doc: &Value) -> Vec<(String, String, bool)> {
    doc["request"]["headers"]
        .as_array()
        .unwrap_or_else(|| panic!("headers in {doc}"))
        .iter()
        .map(|h| {
            (h["name"].as_str().unwrap().into(), h["value"].as_str().unwrap().into(), h["redacted"] == true)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_made_to_read_payloads_says_so_in_its_document_and_the_audit_trail() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "support", "read_payloads": true})).await;
    assert_eq!((made.status.as_u16(), made.body["read_payloads"].clone()), (201, json!(true)), "{made:?}");
    let id = made.body["id"].as_str().unwrap().to_owned();
    let plain = admin.post("/admin/v1/keys", &root, json!({"name": "backend"})).await;
    assert_eq!(plain.body["read_payloads"], false, "off unless asked for: {plain:?}");
    let listed = admin.get("/admin/v1/keys", &root).await.body;
    let reads: Vec<(String, bool)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap().to_owned(), k["read_payloads"].as_bool().unwrap()))
        .collect();
    assert!(
        reads.contains(&("support".into(), true)) && reads.contains(&("backend".into(), false)),
        "{reads:?}"
    );

    let trail = admin.get("/admin/v1/audit?action=key.create", &root).await.body;
    let targets: Vec<&str> =
        trail["items"].as_array().unwrap().iter().map(|e| e["target"].as_str().unwrap()).collect();
    assert!(targets.contains(&format!("{id} support (reads payloads)").as_str()), "{targets:?}");
    assert!(targets.iter().any(|t| t.ends_with(" backend")), "{targets:?}");

    // The command line makes the same key with `--read-payloads`, and a read-only portal's too
    // (its tenant decides when it reads them).
    let printed =
        ok(&doorman(db.url(), &["admin", "keys", "create", "--name", "cli", "--read-payloads", "--json"]));
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!((printed["read_payloads"].clone(), printed["read_only"].clone()), (json!(true), json!(false)));
    let tenant = admin.tenant(&root, "Acme").await;
    let portal = ok(&doorman(
        db.url(),
        &["admin", "keys", "create", "--name", "look", "--tenant", &tenant, "--read-only", "--read-payloads"],
    ));
    assert!(portal.starts_with("dmk_"), "the key, printed once");
    let listed = ok(&doorman(db.url(), &["admin", "keys", "list"]));
    assert!(listed.lines().any(|l| l.contains("read-write+payloads") && l.ends_with(" cli")), "{listed}");
    assert!(listed.lines().any(|l| l.contains("read-only+payloads") && l.ends_with(" look")), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_key_allowed_to_read_payloads_sees_the_kept_one_and_every_key_sees_the_request_without_secrets()
 {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let kept = tenant(&admin, &root, "Keeps", "TKEEPS", agent.url(), true).await;
    let bare = tenant(&admin, &root, "Keeps none", "TBARE", agent.url(), false).await;

    // Keys made over the API: support that reads payloads (read-only: it changes nothing, and
    // may still read them), a customer's portal that may write and reads them, one that does not.
    let support =
        made(&admin, &root, json!({"name": "support", "read_only": true, "read_payloads": true})).await;
    let portal =
        made(&admin, &root, json!({"name": "portal", "tenant_id": kept, "read_payloads": true})).await;
    let portal_without = made(&admin, &root, json!({"name": "portal without", "tenant_id": kept})).await;

    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &base, "TKEEPS", "EvKept").await, 200);
    assert_eq!(post_event(&http_client(), &base, "TBARE", "EvBare").await, 200);
    let event = until(&admin, &support, &kept, "EvKept", "failed").await;
    until(&admin, &support, &bare, "EvBare", "failed").await;

    // Allowed: the payload as Slack sent it, the verification token redacted.
    assert_eq!(event["payload_kept"], true, "{event}");
    assert_eq!(event["payload_hidden"], Value::Null, "{event}");
    let payload: Value = serde_json::from_str(event["payload"].as_str().expect("the payload")).unwrap();
    assert_eq!(payload["event_id"], "EvKept");
    assert_eq!(payload["event"]["text"], "<@U0LAN0Z89> hello");
    assert_eq!(payload["token"], "… (redacted)", "Slack's verification token is never shown");
    // The request: POST to the agent as it is now, its headers in order, the signature redacted.
    assert_eq!(event["request"]["method"], "POST");
    assert_eq!(event["request"]["url"], agent.url());
    let sent = headers(&event);
    assert_eq!(sent.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(), HEADERS);
    let host = agent.url().trim_start_matches("http://").split('/').next().unwrap().to_owned();
    assert_eq!(sent[0], ("host".into(), host, false));
    assert!(sent[1].1.starts_with("doorman/"), "{sent:?}");
    assert_eq!(sent[2], ("content-type".into(), "application/json".into(), false));
    assert_eq!(sent[4], ("webhook-id".into(), "evt_EvKept".into(), false));
    assert_eq!(sent[6], ("webhook-signature".into(), "v1,… (redacted)".into(), true));
    assert_eq!(sent.iter().filter(|h| h.2).count(), 1, "only the signature is withheld");
    // The agent received what the page says, and nothing secret it received is in any answer.
    let arrived = agent.arrivals();
    assert!(
        !arrived.is_empty()
            && arrived.iter().all(|a| a.webhook_id == "evt_EvKept" || a.webhook_id == "evt_EvBare")
    );
    let portal_doc = admin.get(&format!("/admin/v1/tenants/{kept}/events/EvKept"), &portal).await;
    assert_eq!(portal_doc.body["payload"], event["payload"], "{portal_doc:?}");
    let refused = admin.get(&format!("/admin/v1/tenants/{kept}/events/EvKept"), &root).await;
    let without = admin.get(&format!("/admin/v1/tenants/{kept}/events/EvKept"), &portal_without).await;
    let not_kept = admin.get(&format!("/admin/v1/tenants/{bare}/events/EvBare"), &support).await;
    for answer in [&event, &portal_doc.body, &refused.body, &without.body, &not_kept.body] {
        let text = answer.to_string();
        for arrival in &arrived {
            let signature = arrival.webhook_signature.trim_start_matches("v1,");
            assert!(!text.contains(signature), "a signature reached an answer: {text}");
        }
        for secret in [AGENT_SECRET, AGENT_SECRET.trim_start_matches("whsec_"), "XXYYZZ"] {
            assert!(!text.contains(secret), "{secret} reached an answer: {text}");
        }
    }

    // Not allowed: a key not given it (even one for every tenant that may write), and a portal
    // not given it: no payload, and why; the request is shown all the same.
    for doc in [&refused, &without] {
        assert_eq!(doc.status, 200, "{doc:?}");
        assert_eq!(
            (&doc.body["payload"], &doc.body["payload_hidden"]),
            (&Value::Null, &json!("not_allowed"))
        );
        assert_eq!(headers(&doc.body), sent, "the same request for every key");
    }
    // Allowed, and none kept: its tenant keeps none.
    assert_eq!(not_kept.body["payload_kept"], false);
    assert_eq!(
        (&not_kept.body["payload"], &not_kept.body["payload_hidden"]),
        (&Value::Null, &json!("not_kept"))
    );
    assert_eq!(not_kept.body["request"]["headers"][4]["value"], "evt_EvBare");

    // A handled event's payload went with it: not kept. A tenant without an agent shows no request.
    agent.answer_with(200);
    assert_eq!(post_event(&http_client(), &base, "TKEEPS", "EvHandled").await, 200);
    let handled = until(&admin, &support, &kept, "EvHandled", "handled").await;
    assert_eq!(handled["payload_hidden"], "not_kept", "{handled}");
    let removed = admin.post(&format!("/admin/v1/tenants/{bare}/agent/remove"), &root, json!({})).await;
    assert_eq!(removed.status, 204, "{removed:?}");
    let agentless = admin.get(&format!("/admin/v1/tenants/{bare}/events/EvBare"), &support).await;
    assert_eq!(agentless.body["request"], Value::Null, "{agentless:?}");
    server.shutdown().await;
}

/// The setting as `PUT …/read-only-portals-read-payloads` changes it, answered with it.
async fn allow(admin: &Admin, key: &str, tenant: &str, on: bool) -> super::Answer {
    let path = format!("/admin/v1/tenants/{tenant}/read-only-portals-read-payloads");
    admin.put(&path, key, json!({"enabled": on})).await
}

/// What `key` reads of `event`'s payload: the payload, or why not.
async fn payload_of(admin: &Admin, key: &str, tenant: &str, event: &str) -> (Value, Value) {
    let read = admin.get(&format!("/admin/v1/tenants/{tenant}/events/{event}"), key).await;
    assert_eq!(read.status, 200, "{read:?}");
    (read.body["payload"].clone(), read.body["payload_hidden"].clone())
}

/// Issue 42: a payload is shown "never to a read-only portal key unless the tenant allows". A
/// read-only portal key made with `read_payloads` (made, no longer refused) reads its tenant's
/// payload only while the tenant allows its read-only portals to: not before (saying that it is
/// the tenant's doing), then once support allows it, then not again once the tenant's own
/// writing key turns it off; never another tenant's, whatever either allows. A read-only
/// portal not made with `read_payloads` reads none even while allowed; the portal cannot allow
/// itself; each change is audited under the key that made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_portal_key_reads_its_tenants_payloads_only_while_the_tenant_allows_it() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let acme = tenant(&admin, &root, "Acme", "TPORTAL", agent.url(), true).await;
    let globex = tenant(&admin, &root, "Globex", "TGLOBEX", agent.url(), true).await;

    // Made over the API, read-only and reading payloads: 201, and the key says both.
    let asked = json!({"name": "look", "tenant_id": acme, "read_only": true, "read_payloads": true});
    let answer = admin.post("/admin/v1/keys", &root, asked).await;
    assert_eq!(answer.status, 201, "{answer:?}");
    assert_eq!((&answer.body["read_only"], &answer.body["read_payloads"]), (&json!(true), &json!(true)));
    let portal = answer.body["key"].as_str().unwrap().to_owned();
    let plain = made(&admin, &root, json!({"name": "plain", "tenant_id": acme, "read_only": true})).await;
    let theirs = made(
        &admin,
        &root,
        json!({"name": "theirs", "tenant_id": globex, "read_only": true, "read_payloads": true}),
    )
    .await;
    let writer = made(&admin, &root, json!({"name": "acme backend", "tenant_id": acme})).await;

    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &base, "TPORTAL", "EvPortal").await, 200);
    assert_eq!(post_event(&http_client(), &base, "TGLOBEX", "EvGlobex").await, 200);
    let support = made(&admin, &root, json!({"name": "support", "read_payloads": true})).await;
    let kept = until(&admin, &support, &acme, "EvPortal", "failed").await["payload"].clone();
    assert!(kept.as_str().is_some_and(|p| p.contains("hello")), "support reads it: {kept}");
    until(&admin, &support, &globex, "EvGlobex", "failed").await;
    server.shutdown().await;
    let hidden_by_tenant = (Value::Null, json!("not_allowed_by_tenant"));
    let hidden_by_key = (Value::Null, json!("not_allowed"));

    // Off by default: the document says so, and the portal reads no payload, told why.
    let doc = format!("/admin/v1/tenants/{acme}");
    assert_eq!(admin.get(&doc, &portal).await.body["read_only_portals_read_payloads"], false);
    assert_eq!(payload_of(&admin, &portal, &acme, "EvPortal").await, hidden_by_tenant);
    // The portal may not allow itself (a read-only key changes nothing): 403, nothing changed.
    problem(&allow(&admin, &portal, &acme, true).await, 403, None);
    assert_eq!(payload_of(&admin, &portal, &acme, "EvPortal").await, hidden_by_tenant);

    // Support allows it: the setting answered, in the tenant's document, and the payload shown.
    let on = allow(&admin, &root, &acme, true).await;
    assert_eq!((on.status.as_u16(), on.body), (200, json!({"enabled": true})));
    assert_eq!(admin.get(&doc, &root).await.body["read_only_portals_read_payloads"], true);
    let listed = admin.get("/admin/v1/tenants", &root).await.body;
    let allows: Vec<(&str, bool)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["read_only_portals_read_payloads"].as_bool().unwrap()))
        .collect();
    assert_eq!(allows, [("Acme", true), ("Globex", false)], "each tenant's own");
    assert_eq!(payload_of(&admin, &portal, &acme, "EvPortal").await, (kept.clone(), Value::Null));
    assert_eq!(
        payload_of(&admin, &plain, &acme, "EvPortal").await,
        hidden_by_key,
        "a portal not made with read_payloads: the key may not"
    );
    // Another tenant's payload: never. Acme's portal does not see Globex at all, and Globex's
    // own read-only portal is held to Globex's setting, not Acme's.
    let elsewhere = admin.get(&format!("/admin/v1/tenants/{globex}/events/EvGlobex"), &portal).await;
    assert_eq!(elsewhere.status, 404, "{elsewhere:?}");
    assert!(!elsewhere.body.to_string().contains("hello"));
    assert_eq!(payload_of(&admin, &theirs, &globex, "EvGlobex").await, hidden_by_tenant);
    let acmes = admin.get(&format!("/admin/v1/tenants/{acme}/events/EvPortal"), &theirs).await;
    assert_eq!(acmes.status, 404, "{acmes:?}");

    // The tenant's own writing key turns it off, as it may its other settings: hidden again.
    let off = allow(&admin, &writer, &acme, false).await;
    assert_eq!((off.status.as_u16(), off.body), (200, json!({"enabled": false})));
    assert_eq!(payload_of(&admin, &portal, &acme, "EvPortal").await, hidden_by_tenant);
    assert_eq!(admin.get(&doc, &root).await.body["read_only_portals_read_payloads"], false);

    let trail = admin
        .get(&format!("/admin/v1/audit?tenant={acme}&action=tenant.read_only_portals_read_payloads"), &root)
        .await
        .body;
    let entries: Vec<(&str, &str)> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["actor_name"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    assert_eq!(entries, [("acme backend", "off"), ("test key", "on")], "only the changes made: {trail}");
}

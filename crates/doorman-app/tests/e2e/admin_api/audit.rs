//! The audit trail found by action, key and time over HTTP, a page at a time, and each refused
//! filter answered 422 naming it.

use doorman_testkit::database::TestDatabase;
use serde_json::{Value, json};

use super::{Admin, key, problem};

/// The actions of a listing's items, in order.
fn actions(page: &Value) -> Vec<String> {
    page["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_trail_is_found_by_action_key_and_time_a_page_at_a_time() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "backend"})).await;
    assert_eq!(made.status, 201, "{made:?}");
    let (backend, backend_id) =
        (made.body["key"].as_str().unwrap().to_owned(), made.body["id"].as_str().unwrap().to_owned());
    let a = admin.tenant(&root, "A").await;
    let b = admin.tenant(&backend, "B").await;
    let retained = admin
        .put(&format!("/admin/v1/tenants/{a}/retain-payloads"), &backend, json!({"enabled": true}))
        .await;
    assert_eq!(retained.status, 200, "{retained:?}");

    let creations = admin.get("/admin/v1/audit?action=tenant.create", &root).await;
    assert_eq!(creations.status, 200, "{creations:?}");
    assert_eq!(actions(&creations.body), ["tenant.create", "tenant.create"]);

    let by_backend = admin.get(&format!("/admin/v1/audit?key={backend_id}"), &root).await.body;
    assert_eq!(actions(&by_backend), ["tenant.retain_payloads", "tenant.create"]);
    assert!(by_backend["items"].as_array().unwrap().iter().all(|e| e["actor_id"] == backend_id.as_str()));

    let both = admin.get(&format!("/admin/v1/audit?key={backend_id}&action=tenant.create"), &root).await.body;
    assert_eq!(actions(&both), ["tenant.create"]);
    assert_eq!(both["items"][0]["tenant_id"], b.as_str());

    // With pagination: one at a time, the cursor keeps the filter's place.
    let first = admin.get("/admin/v1/audit?action=tenant.create&limit=1", &root).await.body;
    assert_eq!(first["items"][0]["tenant_id"], b.as_str());
    let cursor = first["next_cursor"].as_str().expect("a second page").to_owned();
    let second =
        admin.get(&format!("/admin/v1/audit?action=tenant.create&limit=1&cursor={cursor}"), &root).await.body;
    assert_eq!(second["items"][0]["tenant_id"], a.as_str());
    assert_eq!(second["next_cursor"], Value::Null);

    // A window: since is included, until is not.
    let all = admin.get("/admin/v1/audit", &root).await.body;
    let at = |i: usize| all["items"][i]["at"].as_str().unwrap().to_owned();
    let encoded = |t: &str| t.replace('+', "%2B");
    assert_eq!(actions(&all)[..3], ["tenant.retain_payloads", "tenant.create", "tenant.create"]);
    let window = admin
        .get(&format!("/admin/v1/audit?since={}&until={}", encoded(&at(2)), encoded(&at(0))), &root)
        .await
        .body;
    assert_eq!(actions(&window), ["tenant.create", "tenant.create"], "{window}");
    let since = admin.get(&format!("/admin/v1/audit?since={}", encoded(&at(0))), &root).await.body;
    assert_eq!(actions(&since), ["tenant.retain_payloads"]);
    let none = admin.get(&format!("/admin/v1/audit?since={0}&until={0}", encoded(&at(0))), &root).await;
    assert_eq!((none.status.as_u16(), actions(&none.body).len()), (200, 0), "an empty window is no mistake");

    // A key scoped to A finds A's entries only, whatever the filter matches elsewhere.
    let scoped = key(&db, Some(&a), true).await;
    let own = admin.get(&format!("/admin/v1/audit?key={backend_id}"), &scoped).await.body;
    assert_eq!(actions(&own), ["tenant.retain_payloads"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_audit_filter_is_a_422_naming_it() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    for (query, field) in [
        ("action=tenant.created", "action"),
        ("action=", "action"),
        ("key=backend", "key"),
        ("since=yesterday", "since"),
        ("until=2026-12-01", "until"),
        ("since=2026-12-01T10:00:00Z&until=2026-12-01T09:59:59Z", "until"),
        ("since=2026-12-01T10:00:00Z&until=2026-12-01T10:30:00%2B01:00", "until"),
    ] {
        let refused = admin.get(&format!("/admin/v1/audit?{query}"), &root).await;
        problem(&refused, 422, Some(field));
        assert!(refused.body["detail"].as_str().unwrap().len() < 120, "a short reason: {refused:?}");
    }
    let detail =
        admin.get("/admin/v1/audit?since=2026-12-01T10:00:00Z&until=2026-12-01T09:00:00Z", &root).await;
    assert!(detail.body["detail"].as_str().unwrap().contains("since"), "{detail:?}");
}

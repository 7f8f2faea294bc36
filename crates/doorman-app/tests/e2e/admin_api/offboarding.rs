//! Offboarding a customer over the admin API: a tenant renamed, its agent removed, then the
//! tenant deleted with everything Doorman kept for it, while a real `doorman serve` keeps
//! serving: its workspace's next event is answered as an unknown workspace's.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_testkit::FakeAgent;
use doorman_testkit::database::TestDatabase;
use serde_json::{Value, json};

use super::{Admin, key, problem};
use crate::helpers::{
    AGENT_SECRET, WAIT, http_client, metric_value, post_command, post_event, receipts_of, serve_config,
};

/// Rows of `table` for `tenant`, read as the owner.
async fn rows(db: &TestDatabase, table: &str, column: &str, tenant: &str) -> i64 {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(format!("SELECT count(*) AS n FROM {table} WHERE {column} = '{tenant}'"))
        .get_result::<Count>(&mut db.owner().await)
        .await
        .unwrap()
        .n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_tenant_leaves_nothing_but_its_audit_entries_and_its_next_event_is_an_unknown_workspaces() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let t = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&t("/workspaces"), &root, json!({"team_id": "TOFFBOARD"})).await.status, 201);
    let set =
        admin.put(&t("/agent"), &root, json!({"url": agent.url(), "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(admin.put(&t("/retain-payloads"), &root, json!({"enabled": true})).await.status, 200);
    let scoped = key(&db, Some(&tenant), false).await;

    // Renamed, by its own scoped key.
    let renamed =
        admin.call(reqwest::Method::PATCH, &t(""), Some(&scoped), Some(json!({"name": "Acme Ltd"}))).await;
    assert_eq!(
        (renamed.status.as_u16(), renamed.body["name"].as_str()),
        (200, Some("Acme Ltd")),
        "{renamed:?}"
    );

    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    let metrics = format!("http://{}", server.metrics_addr());
    let http = http_client();
    for n in 0..3 {
        assert_eq!(post_event(&http, &base, "TOFFBOARD", &format!("EvOff{n}")).await, 200);
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while (0..3).any(|n| agent.count_for(&format!("EvOff{n}")) == 0) {
        assert!(tokio::time::Instant::now() < deadline, "the events were never dispatched");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // What a deletion must also take: the kept payload of an event whose dispatch failed, and
    // a slash command's fingerprint (kept to refuse a replay of the same signed request).
    agent.answer_with(500);
    assert_eq!(post_event(&http, &base, "TOFFBOARD", "EvOffFailed").await, 200);
    while admin.get(&t("/events/EvOffFailed"), &root).await.body["status"] != "failed" {
        assert!(tokio::time::Instant::now() < deadline, "the failure was never recorded");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    agent.answer_with(200);
    assert_eq!(post_command(&http, &base, "TOFFBOARD").await, 200);
    while rows(&db, "messaging_request_replays", "tenant_id", &tenant).await == 0 {
        assert!(tokio::time::Instant::now() < deadline, "the command's fingerprint was never kept");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(rows(&db, "messaging_event_payloads", "tenant_id", &tenant).await, 1, "the failed event's");

    // Its agent removed: deliveries are answered 503 (no agent), then it is set again.
    let removed = admin.call(reqwest::Method::POST, &t("/agent/remove"), Some(&root), None).await;
    assert_eq!(removed.status, 204, "{removed:?}");
    assert_eq!(admin.get(&t("/agent"), &root).await.body["url"], serde_json::Value::Null);
    let agent_methods = admin.call(reqwest::Method::DELETE, &t("/agent"), Some(&root), None).await;
    assert_eq!(agent_methods.status, 405, "removal is the remove action, not DELETE: {agent_methods:?}");
    problem(&admin.call(reqwest::Method::POST, &t("/agent/remove"), Some(&root), None).await, 409, None);
    let started = tokio::time::Instant::now();
    while post_event(&http, &base, "TOFFBOARD", "EvNoAgent").await != 503 {
        assert!(started.elapsed() < WAIT, "the removal never reached the serving process");
    }
    let set =
        admin.put(&t("/agent"), &root, json!({"url": agent.url(), "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200, "{set:?}");

    // Only a key for every tenant deletes: the tenant's own key is forbidden.
    problem(&admin.call(reqwest::Method::DELETE, &t(""), Some(&scoped), None).await, 403, None);
    let deleted = admin.call(reqwest::Method::DELETE, &t(""), Some(&root), None).await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    assert_eq!(deleted.body, json!({"tenant_id": tenant, "receipts_deleted": 4, "receipts_left": false}));

    // Gone from the directory and the receipts; the scoped key went with it; the audit trail
    // keeps every entry, this one last.
    problem(&admin.get(&t(""), &root).await, 404, None);
    problem(&admin.call(reqwest::Method::DELETE, &t(""), Some(&root), None).await, 404, None);
    assert_eq!(admin.get(&t(""), &scoped).await.status, 401, "its scoped key went with it");
    for (table, column) in [
        ("tenants", "id"),
        ("messaging_workspaces", "tenant_id"),
        ("agent_bridges", "tenant_id"),
        ("admin_keys", "tenant_id"),
        ("messaging_event_receipts", "tenant_id"),
        ("messaging_event_payloads", "tenant_id"),
        ("messaging_request_replays", "tenant_id"),
    ] {
        assert_eq!(rows(&db, table, column, &tenant).await, 0, "{table}");
    }
    assert_eq!(rows(&db, "deleted_tenants", "tenant_id", &tenant).await, 1);
    // Its trail, read by naming it (a key for every tenant may), is the same as the whole
    // trail's entries for it.
    let named = admin.get(&format!("/admin/v1/audit?tenant={tenant}&limit=100"), &root).await;
    assert_eq!(named.status, 200, "{named:?}");
    let trail = admin.get("/admin/v1/audit?limit=100", &root).await;
    let of_tenant: Vec<&Value> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tenant_id"] == tenant.as_str())
        .collect();
    assert_eq!(named.body["items"].as_array().unwrap().iter().collect::<Vec<_>>(), of_tenant);
    let actions: Vec<&str> = of_tenant.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        [
            "tenant.purge",
            "tenant.purge",
            "tenant.delete",
            "agent.set",
            "agent.remove",
            "tenant.rename",
            "key.create",
            "tenant.retain_payloads",
            "agent.set",
            "workspace.link",
            "tenant.create"
        ],
        "newest first"
    );
    let purge: Vec<&str> = of_tenant[..2].iter().map(|e| e["target"].as_str().unwrap()).collect();
    assert_eq!(purge, ["4 receipts deleted", "started"], "its receipts' deletion, recorded before and after");

    // Its workspace is nobody's now: the next event is answered 200 and goes nowhere.
    let unknown_before = metric_value(&http, &metrics, "doorman_unknown_workspaces_total").await;
    let started = tokio::time::Instant::now();
    loop {
        assert_eq!(post_event(&http, &base, "TOFFBOARD", "EvAfter").await, 200);
        if metric_value(&http, &metrics, "doorman_unknown_workspaces_total").await > unknown_before {
            break;
        }
        assert!(started.elapsed() < WAIT, "the deletion never reached the serving process");
    }
    assert_eq!(agent.count_for("EvAfter"), 0);
    assert!(receipts_of(&db).await.iter().all(|r| r.event_id != "EvAfter"));
    server.shutdown().await;
}

/// What a claim written in the moment before the deletion reached a serving process leaves, or
/// an offboarding stopped half way, `receipts prune` deletes, whatever its age.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_a_deleted_tenant_left_are_pruned_whatever_their_age() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Gone").await;
    let kept = admin.tenant(&root, "Kept").await;
    assert_eq!(
        admin
            .call(reqwest::Method::DELETE, &format!("/admin/v1/tenants/{tenant}"), Some(&root), None)
            .await
            .status,
        200
    );
    // A late claim for the deleted tenant, and a fresh one of another tenant.
    for (who, id) in [(&tenant, "EvLate"), (&kept, "EvFresh")] {
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{who}', 'slack', '{id}', 'app_mention', 0, now())"
        ))
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    }
    let pruned = crate::helpers::doorman(db.url(), &["receipts", "prune", "--json"]);
    assert!(pruned.status.success(), "{}", String::from_utf8_lossy(&pruned.stderr));
    let left: Vec<String> = receipts_of(&db).await.into_iter().map(|r| r.event_id).collect();
    assert_eq!(left, ["EvFresh"], "the deleted tenant's receipt went, the other's fresh one stayed");
}

/// The tenant's deletion commits first, then its receipts go. When that stops (a storage
/// error, injected here by a trigger refusing their deletion), the answer is still the one
/// outcome that happened: deleted, once (200 with `receipts_left`; a repeat is 404, as for any
/// deleted tenant), its `tenant.purge` entry says why, and the next `receipts prune` finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_whose_receipts_stop_going_is_answered_deleted_once_and_prune_finishes_it() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Gone").await;
    diesel_async::SimpleAsyncConnection::batch_execute(
        &mut db.owner().await,
        &format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{tenant}', 'slack', 'EvLeft1', 'app_mention', 0, now()), ('{tenant}', 'slack', 'EvLeft2', 'app_mention', 0, now()); \
             CREATE FUNCTION refuse_receipt_deletion() RETURNS trigger LANGUAGE plpgsql AS \
               $$ BEGIN RAISE EXCEPTION 'injected: receipts refuse to go'; END $$; \
             CREATE TRIGGER refuse_receipt_deletion BEFORE DELETE ON messaging_event_receipts \
               FOR EACH ROW EXECUTE FUNCTION refuse_receipt_deletion();"
        ),
    )
    .await
    .unwrap();

    let path = format!("/admin/v1/tenants/{tenant}");
    let deleted = admin.call(reqwest::Method::DELETE, &path, Some(&root), None).await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    assert_eq!(deleted.body, json!({"tenant_id": tenant, "receipts_deleted": 0, "receipts_left": true}));
    problem(&admin.get(&path, &root).await, 404, None);
    problem(&admin.call(reqwest::Method::DELETE, &path, Some(&root), None).await, 404, None);
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    let entries: Vec<(&str, &str)> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["target"].as_str().unwrap_or("")))
        .take(3)
        .collect();
    assert_eq!(entries[1..], [("tenant.purge", "started"), ("tenant.delete", "Gone")], "{trail:?}");
    assert_eq!(entries[0].0, "tenant.purge");
    assert!(entries[0].1.starts_with("stopped: "), "why it stopped: {entries:?}");
    assert_eq!(receipts_of(&db).await.len(), 2, "left for the next prune");

    diesel_async::SimpleAsyncConnection::batch_execute(
        &mut db.owner().await,
        "DROP TRIGGER refuse_receipt_deletion ON messaging_event_receipts",
    )
    .await
    .unwrap();
    let pruned = crate::helpers::doorman(db.url(), &["receipts", "prune", "--json"]);
    assert!(pruned.status.success(), "{}", String::from_utf8_lossy(&pruned.stderr));
    assert!(receipts_of(&db).await.is_empty(), "the next prune finished it");
}

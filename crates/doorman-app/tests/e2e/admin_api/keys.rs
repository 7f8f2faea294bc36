//! Keys over HTTP: a key for every tenant makes, lists and revokes keys; an expiry and the last
//! use are kept; every failed authentication is counted by reason.

use doorman_testkit::database::TestDatabase;
use reqwest::Method;
use serde_json::json;

use super::{Admin, key, problem};

/// `doorman_admin_auth_failures_total{reason}` as the admin process reports it.
async fn failures(admin: &Admin, reason: &str) -> u64 {
    let metrics =
        admin.http.get(format!("{}/metrics", admin.metrics_base)).send().await.unwrap().text().await.unwrap();
    let line = format!("doorman_admin_auth_failures_total{{reason=\"{reason}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line} in {metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_for_every_tenant_makes_lists_and_revokes_keys_and_a_scoped_one_cannot() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;

    let made = admin
        .post(
            "/admin/v1/keys",
            &root,
            json!({"name": "acme portal", "tenant_id": tenant, "read_only": true, "expires_in_seconds": 2_592_000}),
        )
        .await;
    assert_eq!(made.status, 201, "{made:?}");
    let portal = made.body["key"].as_str().expect("the key, shown once").to_owned();
    let id = made.body["id"].as_str().unwrap().to_owned();
    assert!(portal.starts_with("dmk_"));
    assert_eq!(
        (
            made.body["tenant_id"].as_str(),
            made.body["read_only"].as_bool(),
            made.body["last_used_at"].is_null()
        ),
        (Some(tenant.as_str()), Some(true), true)
    );

    // The new key works within its scope, and its use is recorded.
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{tenant}"), &portal).await.status, 200);
    let shown = admin.get(&format!("/admin/v1/keys/{id}"), &root).await;
    assert_eq!(shown.status, 200, "{shown:?}");
    assert!(shown.body["last_used_at"].is_string(), "{shown:?}");
    assert!(
        shown.body.get("key").is_none() && !shown.body.to_string().contains(&portal),
        "never the key again"
    );
    let listed = admin.get("/admin/v1/keys", &root).await;
    assert_eq!(listed.status, 200);
    assert!(listed.body["items"].as_array().unwrap().iter().any(|k| k["id"] == id.as_str()));
    assert!(!listed.body.to_string().contains("dmk_"), "no key in a listing");

    // Only a key that may do everything manages keys.
    let writer_for_one = key(&db, Some(&tenant), false).await;
    let reader_for_all = key(&db, None, true).await;
    for weaker in [&portal, &writer_for_one, &reader_for_all] {
        problem(&admin.get("/admin/v1/keys", weaker).await, 403, None);
        problem(&admin.post("/admin/v1/keys", weaker, json!({"name": "escalate"})).await, 403, None);
        problem(
            &admin.call(Method::DELETE, &format!("/admin/v1/keys/{id}"), Some(weaker), None).await,
            403,
            None,
        );
    }

    // Refusals of a body: an expiry too soon, an unknown field, an unknown tenant.
    problem(
        &admin.post("/admin/v1/keys", &root, json!({"name": "x", "expires_in_seconds": 5})).await,
        422,
        Some("expires_in_seconds"),
    );
    problem(&admin.post("/admin/v1/keys", &root, json!({"name": "x", "admin": true})).await, 400, None);
    let ghost = uuid::Uuid::new_v4().to_string();
    problem(&admin.post("/admin/v1/keys", &root, json!({"name": "x", "tenant_id": ghost})).await, 404, None);
    problem(&admin.get(&format!("/admin/v1/keys/{}", uuid::Uuid::new_v4()), &root).await, 404, None);

    // Revoked: refused from its next request on, counted as revoked.
    let revoked_before = failures(&admin, "revoked").await;
    assert_eq!(
        admin.call(Method::DELETE, &format!("/admin/v1/keys/{id}"), Some(&root), None).await.status,
        204
    );
    problem(&admin.get(&format!("/admin/v1/tenants/{tenant}"), &portal).await, 401, None);
    assert_eq!(failures(&admin, "revoked").await, revoked_before + 1);
    problem(&admin.call(Method::DELETE, &format!("/admin/v1/keys/{id}"), Some(&root), None).await, 404, None);
    let shown = admin.get(&format!("/admin/v1/keys/{id}"), &root).await;
    assert!(shown.body["revoked_at"].is_string(), "{shown:?}");

    // An expiring key stops at its expiry (moved to a second from now here).
    let brief = admin.post("/admin/v1/keys", &root, json!({"name": "brief", "expires_in_seconds": 60})).await;
    assert_eq!(brief.status, 201, "{brief:?}");
    assert!(brief.body["expires_at"].is_string(), "{brief:?}");
    let brief_id = brief.body["id"].as_str().unwrap().to_owned();
    let brief = brief.body["key"].as_str().unwrap().to_owned();
    assert_eq!(admin.get("/admin/v1/tenants", &brief).await.status, 200);
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "UPDATE admin_keys SET expires_at = now() + interval '1 second' WHERE id = '{brief_id}'"
        )),
        &mut db.owner().await,
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let expired_before = failures(&admin, "expired").await;
    problem(&admin.get("/admin/v1/tenants", &brief).await, 401, None);
    assert_eq!(failures(&admin, "expired").await, expired_before + 1);

    // The other reasons, each counted.
    for (reason, presented) in [
        ("malformed", "dmk_nothing".to_owned()),
        ("unknown_key", format!("dmk_{}_c2VjcmV0", uuid::Uuid::new_v4().simple())),
        ("wrong_secret", format!("{root}x")),
    ] {
        let before = failures(&admin, reason).await;
        problem(&admin.get("/admin/v1/tenants", &presented).await, 401, None);
        assert_eq!(failures(&admin, reason).await, before + 1, "{reason}");
    }
    let before = failures(&admin, "missing").await;
    problem(&admin.call(Method::GET, "/admin/v1/tenants", None, None).await, 401, None);
    assert_eq!(failures(&admin, "missing").await, before + 1);

    // Every key change is in the trail.
    let trail = admin.get("/admin/v1/audit?limit=100", &root).await;
    let actions: Vec<&str> =
        trail.body["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(
        actions.iter().filter(|a| **a == "key.create").count() >= 2 && actions.contains(&"key.revoke"),
        "{actions:?}"
    );
}

/// A scoped key's revocation is part of its tenant's story: in the tenant's trail, on its
/// customer's own audit page (read with another of its keys), and in the trail kept after the
/// tenant is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_keys_revocation_is_in_its_tenants_trail_before_and_after_offboarding() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let portal = key(&db, Some(&tenant), true).await;
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "support", "tenant_id": tenant})).await;
    assert_eq!(made.status, 201, "{made:?}");
    let id = made.body["id"].as_str().unwrap().to_owned();
    let revoked = admin.call(Method::DELETE, &format!("/admin/v1/keys/{id}"), Some(&root), None).await;
    assert_eq!(revoked.status, 204, "{revoked:?}");

    let revocations = |page: &serde_json::Value| -> Vec<(String, String)> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "key.revoke")
            .map(|e| {
                (
                    e["tenant_id"].as_str().unwrap_or("none").to_owned(),
                    e["target"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let expected = vec![(tenant.clone(), id.clone())];
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    assert_eq!(revocations(&trail.body), expected, "the tenant's trail: {trail:?}");
    let own = admin.get("/admin/v1/audit", &portal).await;
    assert_eq!(revocations(&own.body), expected, "the customer's own audit: {own:?}");

    let deleted = admin.call(Method::DELETE, &format!("/admin/v1/tenants/{tenant}"), Some(&root), None).await;
    assert_eq!(deleted.status, 200, "{deleted:?}");
    let kept = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    assert_eq!(revocations(&kept.body), expected, "the trail kept after offboarding: {kept:?}");
}

//! `GET /admin/v1/events?event_id=`: support finds an event by its Slack id without knowing
//! its tenant; a scoped key finds its own tenant's only.

use diesel_async::RunQueryDsl;
use doorman_testkit::database::TestDatabase;
use reqwest::Method;
use serde_json::Value;

use super::{Admin, key, problem};

/// A receipt as the serving process leaves it: handled, failed or unfinished.
async fn receipt(db: &TestDatabase, tenant: &str, platform: &str, id: &str, outcome: &str) {
    let (handled, failure) = match outcome {
        "handled" => ("now()", "NULL, NULL"),
        "failed" => ("NULL", "'agent answered HTTP 500', now()"),
        _ => ("NULL", "NULL, NULL"),
    };
    diesel::sql_query(format!(
        "INSERT INTO messaging_event_receipts \
         (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, handled_at, failure_reason, failed_at) \
         VALUES ('{tenant}', '{platform}', $1, 'app_mention', 0, now() - interval '1 minute', {handled}, {failure})"
    ))
    .bind::<diesel::sql_types::Text, _>(id)
    .execute(&mut db.owner().await)
    .await
    .unwrap();
}

/// `(tenant_id, tenant_name, status)` of each item found.
fn found(answer: &super::Answer) -> Vec<(String, String, String)> {
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items in {answer:?}"))
        .iter()
        .map(|item| {
            let text = |name: &str| item[name].as_str().unwrap_or_default().to_owned();
            (text("tenant_id"), text("tenant_name"), text("status"))
        })
        .collect()
}

fn search(id: &str) -> String {
    format!("/admin/v1/events?event_id={}", urlencoding(id))
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_finds_an_event_by_its_id_in_every_tenant_and_a_scoped_key_its_own_only() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let (acme, globex, initech) = (
        admin.tenant(&root, "Acme").await,
        admin.tenant(&root, "Globex").await,
        admin.tenant(&root, "Initech").await,
    );
    receipt(&db, &globex, "slack", "Ev0123ABCD", "failed").await;
    receipt(&db, &acme, "slack", "Ev0123ABCD", "handled").await;
    receipt(&db, &initech, "teams", "Ev0123ABCD", "handled").await;
    receipt(&db, &initech, "slack", "Ev0123ABCDE", "handled").await;
    let odd = "Ev/<b>?a=1#%20&\"x\"";
    receipt(&db, &initech, "slack", odd, "").await;

    // A key for every tenant (read-only support's, too): both, by tenant name, each as it stands.
    let support = key(&db, None, true).await;
    let both = vec![
        (acme.clone(), "Acme".to_owned(), "handled".to_owned()),
        (globex.clone(), "Globex".to_owned(), "failed".to_owned()),
    ];
    for caller in [&root, &support] {
        assert_eq!(found(&admin.get(&search("Ev0123ABCD"), caller).await), both);
    }
    let answer = admin.get(&search("Ev0123ABCD"), &support).await;
    let first = &answer.body["items"][0];
    assert_eq!(first["platform"], "slack");
    assert_eq!(first["external_event_id"], "Ev0123ABCD");
    assert_eq!(first["event_type"], "app_mention");
    assert!(first["claimed_at"].is_string() && first["handled_at"].is_string(), "{answer:?}");
    assert_eq!(answer.body["items"][1]["failure"]["reason"], "agent answered HTTP 500");
    // The whole id only: no prefix, no other platform's.
    assert_eq!(found(&admin.get(&search("Ev0123ABC"), &root).await), vec![]);
    assert_eq!(found(&admin.get(&search("ev0123abcd"), &root).await), vec![]);
    let odd_found = admin.get(&search(odd), &root).await;
    assert_eq!(found(&odd_found), vec![(initech.clone(), "Initech".to_owned(), "in_flight".to_owned())]);
    assert_eq!(odd_found.body["items"][0]["external_event_id"], odd);

    // A scoped key: its own tenant's, never another's, none when its tenant has none.
    let acme_portal = key(&db, Some(&acme), true).await;
    assert_eq!(found(&admin.get(&search("Ev0123ABCD"), &acme_portal).await), vec![both[0].clone()]);
    let globex_key = key(&db, Some(&globex), false).await;
    assert_eq!(found(&admin.get(&search("Ev0123ABCD"), &globex_key).await), vec![both[1].clone()]);
    let initech_key = key(&db, Some(&initech), true).await;
    let none = admin.get(&search("Ev0123ABCD"), &initech_key).await;
    assert_eq!(none.body, serde_json::json!({"items": []}));

    // What no event id can be: a 422 naming event_id; `.` is well-formed and finds nothing.
    for bad in ["/admin/v1/events", "/admin/v1/events?event_id=", "/admin/v1/events?event_id=%C3%A9v1"] {
        problem(&admin.get(bad, &root).await, 422, Some("event_id"));
    }
    problem(&admin.get(&search(&"E".repeat(256)), &root).await, 422, Some("event_id"));
    assert_eq!(found(&admin.get(&search(&"E".repeat(255)), &root).await), vec![]);
    assert_eq!(found(&admin.get(&search("."), &root).await), vec![]);
    let unkeyed = admin.call(Method::GET, &search("Ev0123ABCD"), None, None).await;
    problem(&unkeyed, 401, None);
    assert_eq!(unkeyed.body.get("items"), None::<&Value>);
    let posted = admin.call(Method::POST, &search("Ev0123ABCD"), Some(&root), None).await;
    problem(&posted, 405, None);
}

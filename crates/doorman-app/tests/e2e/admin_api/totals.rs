//! Listings say how many they select: exact up to 1,000, "more than 1,000" beyond, counted
//! with the listing's own filters, in the API's pages and on the console's.

use diesel_async::SimpleAsyncConnection;
use doorman_testkit::database::TestDatabase;

use super::{Admin, key};
use crate::console::Session;

/// `failed` failed receipts and `handled` handled ones of `tenant`, claimed an hour ago.
async fn receipts(db: &TestDatabase, tenant: &str, failed: u32, handled: u32) {
    let insert = |kind: &str, n: u32, done: &str| {
        format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt,
                 claimed_at, handled_at, failure_reason, failed_at)
             SELECT '{tenant}', 'slack', '{kind}' || n, 'message', 0, now() - interval '1 hour', {done}
             FROM generate_series(1, {n}) AS n;"
        )
    };
    let sql = insert("EvFailed", failed, "NULL, 'agent answered HTTP 500', now() - interval '59 minutes'")
        + &insert("EvHandled", handled, "now() - interval '59 minutes', NULL, NULL");
    db.owner().await.batch_execute(&sql).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_listing_says_how_many_it_selects_exactly_up_to_1000_and_more_than_that_beyond() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let other = admin.tenant(&root, "Globex").await;
    receipts(&db, &tenant, 1001, 3).await;
    receipts(&db, &other, 7, 0).await;
    let events = |query: &str| format!("/admin/v1/tenants/{tenant}/events?{query}");

    let failed = admin.get(&events("state=failed&limit=2"), &root).await;
    assert_eq!(failed.status, 200, "{failed:?}");
    assert_eq!(failed.body["items"].as_array().unwrap().len(), 2);
    assert_eq!((&failed.body["total"], &failed.body["total_is_lower_bound"]), (&1000.into(), &true.into()));
    let handled = admin.get(&events("state=handled&limit=2"), &root).await.body;
    assert_eq!((&handled["total"], &handled["total_is_lower_bound"]), (&3.into(), &false.into()));
    // The next page says the same total: it counts the listing, not what is left.
    let cursor = handled["next_cursor"].as_str().unwrap();
    let next = admin.get(&events(&format!("state=handled&limit=2&cursor={cursor}")), &root).await.body;
    assert_eq!((next["items"].as_array().unwrap().len(), &next["total"]), (1, &3.into()));
    let none = admin.get(&events("state=failed&type=app_mention"), &root).await.body;
    assert_eq!(
        (&none["total"], &none["total_is_lower_bound"]),
        (&0.into(), &false.into()),
        "with its filters"
    );
    let theirs = admin.get(&format!("/admin/v1/tenants/{other}/events?state=failed"), &root).await.body;
    assert_eq!(theirs["total"], 7, "each tenant's own");

    let console = Session::sign_in(&admin.base, &root).await;
    let page = async |state: &str| {
        let shown = console.get(&format!("/console/tenants/{tenant}/events?state={state}")).await;
        shown.text().await.unwrap()
    };
    let failed = page("failed").await;
    assert!(failed.contains(r#"<p id="total">more than 1,000 events</p>"#), "{failed}");
    assert!(page("handled").await.contains(r#"<p id="total">3 events</p>"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_listing_says_how_many_it_finds() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    for name in ["Acme One", "Acme Two", "Acme Three", "Globex"] {
        admin.tenant(&root, name).await;
    }
    let all = admin.get("/admin/v1/tenants?limit=1", &root).await.body;
    assert_eq!((&all["total"], &all["total_is_lower_bound"]), (&4.into(), &false.into()), "{all}");
    let acme = admin.get("/admin/v1/tenants?search=acme&limit=1", &root).await.body;
    assert_eq!(acme["total"], 3);
    let console = Session::sign_in(&admin.base, &root).await;
    let shown = console.get("/console/tenants?search=acme").await.text().await.unwrap();
    assert!(shown.contains(r#"<p id="total">3 tenants</p>"#), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_in_every_state_are_one_list_newest_claim_first_with_its_total() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    receipts(&db, &tenant, 2, 3).await;
    db.owner()
        .await
        .batch_execute(&format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at)
             VALUES ('{tenant}', 'slack', 'EvNewest', 'message', 0, now())"
        ))
        .await
        .unwrap();

    let all = admin.get(&format!("/admin/v1/tenants/{tenant}/events?limit=4"), &root).await;
    assert_eq!(all.status, 200, "{all:?}");
    let items = all.body["items"].as_array().unwrap();
    let statuses: Vec<&str> = items.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(items[0]["external_event_id"], "EvNewest", "newest claim first: {statuses:?}");
    assert_eq!(statuses[0], "in_flight");
    assert_eq!((&all.body["total"], &all.body["total_is_lower_bound"]), (&6.into(), &false.into()));
    let cursor = all.body["next_cursor"].as_str().unwrap();
    let rest =
        admin.get(&format!("/admin/v1/tenants/{tenant}/events?limit=4&cursor={cursor}"), &root).await.body;
    let mut seen: Vec<&str> = statuses.clone();
    seen.extend(rest["items"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap()));
    seen.sort_unstable();
    assert_eq!(seen, ["failed", "failed", "handled", "handled", "handled", "in_flight"]);

    let console = Session::sign_in(&admin.base, &root).await;
    let shown =
        console.get(&format!("/console/tenants/{tenant}/events?state=all")).await.text().await.unwrap();
    assert!(
        shown.contains("Events: all states") && shown.contains(r#"<p id="total">6 events</p>"#),
        "{shown}"
    );
    assert!(shown.contains(r#"<option value="all" selected>all states</option>"#), "{shown}");
    for status in ["failed", "handled", "in flight"] {
        assert!(shown.contains(&format!(">{status}</span>")), "{status} in {shown}");
    }
}

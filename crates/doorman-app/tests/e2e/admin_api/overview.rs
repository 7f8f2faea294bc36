//! The overview's stranded events now (issue 42), over HTTP: the tenants with the most
//! receipts the serving processes' sweep marked stranded, in the API's document and in the
//! console's table, each linked to its tenant's stranded list.

use chrono::{Duration, Utc};
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::receipts::receipt_counts;
use doorman_testkit::database::TestDatabase;
use serde_json::Value;

use super::{Admin, key};
use crate::console::Session;

/// A receipt of `tenant` claimed `minutes` ago as a serving process leaves it: never finished
/// (acknowledged, then the process died mid-dispatch), or `failed`.
pub(super) async fn receipt(db: &TestDatabase, tenant: &str, id: &str, minutes: u32, failed: bool) {
    let failure = if failed { "'agent answered HTTP 500', now()" } else { "NULL, NULL" };
    diesel::sql_query(format!(
        "INSERT INTO messaging_event_receipts \
         (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, failure_reason, failed_at) \
         VALUES ('{tenant}', 'slack', $1, 'app_mention', 0, now() - interval '{minutes} minutes', {failure})"
    ))
    .bind::<diesel::sql_types::Text, _>(id)
    .execute(&mut db.owner().await)
    .await
    .unwrap();
}

/// The sweep as a serving process's receipts watch runs it (stranded after 10 minutes): the
/// stranded count across tenants it reports to its gauge.
pub(super) async fn sweep(db: &TestDatabase) -> i64 {
    let now = Utc::now();
    receipt_counts(&db.pool(), now - Duration::minutes(10), now - Duration::hours(1)).await.unwrap().stranded
}

/// The overview's stranded tenants as (name, id, count), in its order.
fn stranded_most(overview: &Value) -> Vec<(String, String, u64)> {
    overview["stranded_most"]
        .as_array()
        .unwrap_or_else(|| panic!("stranded_most in {overview}"))
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["tenant_id"].as_str().unwrap().to_owned(),
                t["stranded"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_names_the_tenants_with_the_most_stranded_events_and_the_console_links_each_to_its_list()
{
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, true).await;
    let writer = key(&db, None, false).await;
    let (few, many, failing) = (
        admin.tenant(&writer, "Few").await,
        admin.tenant(&writer, "Many").await,
        admin.tenant(&writer, "Failing").await,
    );
    for id in ["EvMany1", "EvMany2", "EvMany3"] {
        receipt(&db, &many, id, 40, false).await;
    }
    receipt(&db, &few, "EvFew", 40, false).await;
    receipt(&db, &few, "EvRecent", 1, false).await;
    receipt(&db, &failing, "EvFailed1", 40, true).await;
    receipt(&db, &failing, "EvFailed2", 40, true).await;

    // Before any sweep: none marked, none counted (the tenant's list finds them already).
    let overview = admin.get("/admin/v1/overview", &root).await;
    assert_eq!((overview.status.as_u16(), stranded_most(&overview.body)), (200, vec![]), "{overview:?}");
    let session = Session::sign_in(&admin.base, &root).await;
    let page = session.get("/console/overview").await.text().await.unwrap();
    assert!(page.contains(r#"<p id="stranded-none">"#) && !page.contains("stranded-most"), "{page}");

    assert_eq!(sweep(&db).await, 4, "the gauge's count: Many's three and Few's one");
    let overview = admin.get("/admin/v1/overview", &root).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert_eq!(
        stranded_most(&overview.body),
        [("Many".to_owned(), many.clone(), 3), ("Few".to_owned(), few.clone(), 1)],
        "the most first; Few's in-flight event and Failing's failed ones are not stranded: {overview:?}"
    );
    let portal = key(&db, Some(&many), true).await;
    assert_eq!(admin.get("/admin/v1/overview", &portal).await.status, 403, "across tenants: not a portal's");

    // The console's table: the same tenants in the same order, each linked to its stranded list.
    let page = session.get("/console/overview").await.text().await.unwrap();
    let table = page
        .split(r#"<table id="stranded-most">"#)
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .unwrap_or_else(|| panic!("the stranded table in {page}"));
    let rows: Vec<&str> = table.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, (tenant, name, count)) in rows.iter().zip([(&many, "Many", 3), (&few, "Few", 1)]) {
        assert!(row.contains(&format!(r#"<a href="/console/tenants/{tenant}">{name}</a>"#)), "{row}");
        assert!(row.contains(&format!("<td>{count}</td>")), "{row}");
        assert!(
            row.contains(&format!(r#"<a href="/console/tenants/{tenant}/events?state=stranded">"#)),
            "{row}"
        );
    }
    assert!(!table.contains("Failing"), "{table}");
    // The link leads to the tenant's stranded events.
    let listed = session.get(&format!("/console/tenants/{many}/events?state=stranded")).await;
    assert_eq!(listed.status(), 200);
    let listed = listed.text().await.unwrap();
    assert!(["EvMany1", "EvMany2", "EvMany3"].iter().all(|id| listed.contains(id)), "{listed}");
}

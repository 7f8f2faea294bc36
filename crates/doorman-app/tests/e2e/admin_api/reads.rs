//! Issue 42's reads write nothing: a tenant's activity, the overview, an event's request and
//! kept payload, and a replay's preview (a dry run), over the API and in the console, leave
//! every row of every table as it was. Only a key's use is recorded (at most once a minute),
//! and the test puts that record ahead so that no read is due to write it.

use diesel_async::RunQueryDsl;
use doorman_testkit::FakeAgent;
use doorman_testkit::database::TestDatabase;
use serde_json::{Value, json};

use super::overview::{receipt, sweep};
use super::payloads::{made, tenant, until};
use super::{Admin, key};
use crate::console::Session;
use crate::helpers::{AGENT_SECRET, http_client, post_event, serve_config};

/// The event ids a dry run's report lists.
fn reported(report: &Value) -> Vec<String> {
    report["events"]
        .as_array()
        .unwrap_or_else(|| panic!("events in {report}"))
        .iter()
        .map(|e| e["external_event_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_activity_the_overview_an_events_request_and_payload_and_a_replay_preview_change_no_row() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = tenant(&admin, &root, "Reads", "TREADS", agent.url(), true).await;
    let support =
        made(&admin, &root, json!({"name": "support", "read_only": true, "read_payloads": true})).await;

    // An event stranded (claimed before the serving process's sweep first looks, so that it
    // marks it), and real dispatches, counted into the rollup (the shutdown flushes it): one
    // failed, its payload kept; one handled.
    receipt(&db, &tenant, "EvStranded", 40, false).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &base, "TREADS", "EvFailed").await, 200);
    until(&admin, &support, &tenant, "EvFailed", "failed").await;
    agent.answer_with(200);
    assert_eq!(post_event(&http_client(), &base, "TREADS", "EvHandled").await, 200);
    until(&admin, &support, &tenant, "EvHandled", "handled").await;
    server.shutdown().await;
    assert_eq!(sweep(&db).await, 1, "marked");
    // Then no sweep for half an hour (the serving processes were down, say): an event stranded
    // since is unmarked, and a read that swept would mark it and move the watermark.
    diesel::sql_query("UPDATE messaging_receipt_sweep SET swept_before = now() - interval '30 minutes'")
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    receipt(&db, &tenant, "EvStrandedSince", 20, false).await;

    // A console session (signing in writes it) and a form token, before.
    let session = Session::sign_in(&admin.base, &support).await;
    let csrf = session.csrf(&format!("/console/tenants/{tenant}/events?state=failed")).await;
    diesel::sql_query("UPDATE admin_keys SET last_used_at = now() + interval '1 day'")
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    let before = db.every_row().await;
    for held in ["messaging_activity_hours: [{", "messaging_event_payloads: [{", "EvStrandedSince"] {
        assert!(before.contains(held), "{held} in {before}");
    }

    // The API.
    let activity = admin.get(&format!("/admin/v1/tenants/{tenant}/activity"), &support).await;
    let now = &activity.body["hours"][23];
    assert_eq!((now["delivered"].as_u64(), now["failed"].as_u64()), (Some(1), Some(1)), "{activity:?}");
    let week = admin.get(&format!("/admin/v1/tenants/{tenant}/activity?hours=168"), &support).await;
    assert_eq!(week.status, 200, "{week:?}");
    let overview = admin.get("/admin/v1/overview", &support).await;
    assert_eq!(overview.body["stranded_most"][0]["stranded"], 1, "the one marked: {overview:?}");
    assert_eq!(overview.body["failing_most"][0]["failed"], 1, "{overview:?}");
    let event = format!("/admin/v1/tenants/{tenant}/events/EvFailed");
    let shown = admin.get(&event, &support).await;
    assert!(shown.body["payload"].is_string() && shown.body["request"].is_object(), "{shown:?}");
    assert_eq!(admin.get(&event, &root).await.body["payload_hidden"], "not_allowed");
    let one = admin.post(&format!("{event}/replay"), &support, json!({"dry_run": true})).await;
    assert_eq!((one.status.as_u16(), reported(&one.body)), (200, vec!["EvFailed".to_owned()]), "{one:?}");
    let replays = format!("/admin/v1/tenants/{tenant}/replays");
    for (body, expected) in [
        (json!({"failed_since": "2000-01-01T00:00:00Z", "dry_run": true}), "EvFailed"),
        (json!({"stranded": true, "dry_run": true}), "EvStrandedSince"),
        (json!({"filter": {"state": "failed"}, "dry_run": true}), "EvFailed"),
        (json!({"event_ids": ["EvFailed", "EvHandled"], "dry_run": true}), "EvFailed"),
    ] {
        let preview = admin.post(&replays, &support, body.clone()).await;
        assert_eq!(preview.status, 200, "{body}: {preview:?}");
        assert!(reported(&preview.body).contains(&expected.to_owned()), "{body}: {preview:?}");
    }

    // The console.
    for page in [
        "/console/overview".to_owned(),
        format!("/console/tenants/{tenant}"),
        format!("/console/tenants/{tenant}/events/EvFailed"),
    ] {
        let answer = session.get(&page).await;
        assert_eq!(answer.status(), 200, "{page}");
    }
    let preview = session
        .post(
            &format!("/console/tenants/{tenant}/replays/preview"),
            Some(&admin.base),
            &[("csrf", csrf.as_str()), ("state", "failed")],
        )
        .await;
    assert_eq!(preview.status(), 200);
    let preview = preview.text().await.unwrap();
    assert!(preview.contains("EvFailed") && preview.contains("would replay"), "{preview}");

    // Named by table only: the rows hold sealed secrets and key hashes.
    let after = db.every_row().await;
    let changed: Vec<&str> = before
        .lines()
        .zip(after.lines())
        .filter(|(was, is)| was != is)
        .map(|(was, _)| was.split(':').next().unwrap_or_default())
        .collect();
    assert!(before == after, "a read changed rows of {changed:?}");
}

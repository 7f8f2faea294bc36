//! Accounting and replay, end to end: `receipts show` and `receipts replay` as an operator
//! runs them (the binary), against a real server's receipts and a real agent.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::schema::messaging_event_payloads as payloads;
use serde_json::{Value, json};

use crate::helpers::{TestApp, doorman, ok, serve_config};

async fn kept_payloads(app: &TestApp) -> i64 {
    payloads::table.count().get_result(&mut app.db.owner().await).await.unwrap()
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// `receipts replay` logs in as the owner, and replays as `doorman_admin` (the admin API's role).
fn replay(app: &TestApp, tenant: &str, selection: &[&str]) -> std::process::Output {
    let mut args = vec!["receipts", "replay", "--tenant", tenant, "--json"];
    args.extend_from_slice(selection);
    doorman(app.db.url(), &args)
}

fn show(app: &TestApp, tenant: &str, event_id: &str) -> std::process::Output {
    doorman(app.db.url(), &["receipts", "show", "--tenant", tenant, "--event-id", event_id, "--json"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_failed_while_the_agent_was_down_are_replayed_once_each_and_then_read_as_handled() {
    let app = TestApp::spawn_full(&[], false, true).await;
    let tenant = app.tenant("T1").await.to_string();
    ok(&doorman(app.db.url(), &["tenant", "retain-payloads", "--tenant", &tenant, "on"]));

    let proxy = app.agent_proxy.as_ref().unwrap();
    proxy.refuse();
    let events = ["EvDown1", "EvDown2", "EvDown3"];
    for id in events {
        assert_eq!(app.event("T1", id, None).await.status(), 200);
    }
    app.quiesce().await;
    assert_eq!(app.db.operator().failed().await.len(), 3);
    let shown = json(&ok(&show(&app, &tenant, "EvDown1")));
    assert_eq!(shown["status"], "failed");
    // The attempt on record says why: nothing reached the agent (its connection was refused).
    let live = &shown["attempts"][0];
    assert_eq!(
        (live["kind"].as_str(), live["failure"].as_str(), &live["status"]),
        (Some("live"), Some("refused"), &json!(null)),
        "{shown}"
    );
    assert_eq!(kept_payloads(&app).await, 3, "kept while unhandled");
    proxy.restore().await;

    let dry = json(&ok(&replay(&app, &tenant, &["--failed-since", "1h", "--dry-run"])));
    assert_eq!(dry["selected"], 3);
    assert_eq!(app.agent.count(), 0, "a dry run sends nothing");

    let report = json(&ok(&replay(&app, &tenant, &["--failed-since", "1h"])));
    assert_eq!(report["succeeded"], 3, "{report}");
    assert!(report["events"].as_array().unwrap().iter().all(|e| e["outcome"] == "handled"), "{report}");
    for id in events {
        assert_eq!(app.agent.count_for(id), 1, "{id} replayed once");
        let received =
            app.agent.received().into_iter().find(|r| r.external_event_id.as_deref() == Some(id)).unwrap();
        assert_eq!(received.webhook_id, format!("evt_{id}"), "the same webhook-id as the live dispatch");
        assert_eq!(received.document["delivery"]["replay"], true);
        assert_eq!(received.document["tenant_id"], tenant.as_str());
        let shown = json(&ok(&show(&app, &tenant, id)));
        assert_eq!(shown["status"], "handled", "{shown}");
        assert_eq!(shown["dispatches"], 2, "the live one that failed, and the replay");
        assert_eq!(shown["payload_kept"], false, "deleted once handled");
        let attempts: Vec<String> = shown["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{} {} {} {}", a["kind"], a["outcome"], a["status"], a["failure"]))
            .collect();
        assert_eq!(
            attempts,
            [r#""live" "failed" null "refused""#, r#""replay" "handled" 200 null"#],
            "a replay by hand is an attempt on record too: {shown}"
        );
    }
    let human =
        ok(&doorman(app.db.url(), &["receipts", "show", "--tenant", &tenant, "--event-id", "EvDown1"]));
    assert!(human.contains(": failed, refused in ") && human.contains(": handled, HTTP 200 in "), "{human}");
    assert_eq!(kept_payloads(&app).await, 0);

    // Nothing is failed any more, and a handled event is refused by name.
    let again = json(&ok(&replay(&app, &tenant, &["--failed-since", "1h"])));
    assert_eq!(again["selected"], 0);
    let handled = replay(&app, &tenant, &["--event-id", "EvDown1"]);
    assert!(!handled.status.success(), "refused: exit 1");
    assert_eq!(json(&String::from_utf8_lossy(&handled.stdout))["events"][0]["outcome"], "already_handled");
    assert_eq!(app.agent.count(), 3, "exactly once each");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_retention_a_replay_refuses_and_names_each_event() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await.to_string();
    app.agent.answer_with(500);
    for id in ["EvNoKeep1", "EvNoKeep2"] {
        assert_eq!(app.event("T1", id, None).await.status(), 200);
    }
    app.quiesce().await;
    app.agent.answer_with(200);

    let refused = replay(&app, &tenant, &["--failed-since", "1h"]);
    assert!(!refused.status.success());
    let report = json(&String::from_utf8_lossy(&refused.stdout));
    let named: Vec<_> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["external_event_id"].as_str().unwrap().to_owned(), e["outcome"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(named, [("EvNoKeep1".into(), "no_payload".into()), ("EvNoKeep2".into(), "no_payload".into())]);
    assert!(report["events"][0]["detail"].as_str().unwrap().contains("retain-payloads"), "{report}");
    let human = doorman(app.db.url(), &["receipts", "replay", "--tenant", &tenant, "--failed-since", "1h"]);
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(stdout.contains("EvNoKeep1") && stdout.contains("no payload kept"), "{stdout}");
    assert_eq!(app.agent.requests(), 2, "the two live attempts, nothing more");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_retention_a_handled_events_payload_is_gone_and_only_an_unhandled_one_stays_sealed() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await.to_string();
    ok(&doorman(app.db.url(), &["tenant", "retain-payloads", "--tenant", &tenant, "on"]));
    assert_eq!(app.event("T1", "EvHandled", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.count_for("EvHandled"), 1);
    assert_eq!(kept_payloads(&app).await, 0, "handled: its payload is deleted with the completion");

    app.agent.answer_with(500);
    assert_eq!(app.event("T1", "EvUnhandled", None).await.status(), 200);
    app.quiesce().await;
    let sealed: Vec<String> =
        payloads::table.select(payloads::payload).load(&mut app.db.owner().await).await.unwrap();
    assert_eq!(sealed.len(), 1);
    assert!(sealed[0].starts_with("v1:") && !sealed[0].contains("EvUnhandled"), "sealed: {}", sealed[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_answers_in_flight_stranded_failed_handled_or_unknown() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await.to_string();
    app.agent.close_gate();
    assert_eq!(app.event("T1", "EvHeld", None).await.status(), 200);
    app.agent.wait_until("the held dispatch", crate::helpers::WAIT, |a| a.in_flight() == 1).await;
    assert_eq!(json(&ok(&show(&app, &tenant, "EvHeld")))["status"], "in_flight");
    let stranded = doorman(
        app.db.url(),
        &["receipts", "show", "--tenant", &tenant, "--event-id", "EvHeld", "--older-than", "0s"],
    );
    assert!(String::from_utf8_lossy(&stranded.stdout).contains("stranded"), "{stranded:?}");
    app.agent.open_gate();
    app.quiesce().await;

    let shown = json(&ok(&show(&app, &tenant, "EvHeld")));
    assert_eq!((shown["status"].as_str(), shown["dispatches"].as_u64()), (Some("handled"), Some(1)));
    assert_eq!(shown["delivery_attempt"], 0);
    let human =
        ok(&doorman(app.db.url(), &["receipts", "show", "--tenant", &tenant, "--event-id", "EvHeld"]));
    assert!(
        human.contains("handled at") && human.contains("after 1 dispatch") && human.contains("attempt 0"),
        "{human}"
    );

    let unknown = show(&app, &tenant, "EvNever");
    assert_eq!(unknown.status.code(), Some(1), "unknown: exit 1");
    assert_eq!(json(&String::from_utf8_lossy(&unknown.stdout))["status"], "unknown");
    let bad = doorman(app.db.url(), &["receipts", "show", "--tenant", "nope", "--event-id", "Ev1"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("--tenant"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_server_counts_stranded_and_recently_failed_receipts_into_its_gauges() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await;
    app.agent.answer_with(500);
    assert_eq!(app.event("T1", "EvFailed", None).await.status(), 200);
    app.quiesce().await;
    // An event acknowledged an hour ago whose dispatch never finished (a crash, say),
    // claimed as a claim arriving that late is (the first server's sweep has passed it).
    let lost = doorman_domain::NewReceipt {
        key: doorman_domain::ReceiptKey {
            tenant,
            platform: doorman_domain::Platform::Slack,
            external_id: doorman_domain::ExternalEventId::new("EvLost").unwrap(),
        },
        claim: doorman_domain::ClaimId::generate(),
        event_type: doorman_domain::Label::new("event type", "app_mention").unwrap(),
        attempt: 0,
        claimed_at: chrono::Utc::now() - chrono::Duration::hours(1),
        retained: None,
    };
    let store = doorman_testkit::database::receipt_store(app.db.pool());
    use doorman_domain::ports::ReceiptStore;
    assert_eq!(store.claim(&lost).await.unwrap(), doorman_domain::Claim::Claimed);

    // The watch counts when a server starts, then once a minute.
    let fresh = doorman_app::slack::start(serve_config(&app.db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", fresh.metrics_addr());
    let deadline = tokio::time::Instant::now() + crate::helpers::WAIT;
    let gauge = |metrics: &str, name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned))
            .unwrap_or_default()
    };
    loop {
        let metrics = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
        if gauge(&metrics, "doorman_ready") == "1" {
            assert_eq!(gauge(&metrics, "doorman_receipts_stranded"), "1", "{metrics}");
            assert_eq!(gauge(&metrics, "doorman_receipts_failed_recent"), "1");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the watch never counted: {metrics}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    fresh.shutdown().await;
}

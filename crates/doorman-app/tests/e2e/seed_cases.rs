//! The seed note's cases, each through the real server.

use std::time::Duration;

use diesel_async::RunQueryDsl;

use crate::helpers::{TestApp, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_of_the_same_event_id_dispatches_once() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await;

    assert_eq!(app.event("T1", "Ev1", None).await.status(), 200);
    app.agent.wait_until("the first dispatch", WAIT, |a| a.count() == 1).await;
    for attempt in 1..=3 {
        assert_eq!(app.event("T1", "Ev1", Some(attempt)).await.status(), 200, "attempt {attempt}");
    }
    app.quiesce().await;

    assert_eq!(app.agent.count_for("Ev1"), 1);
    let rows = app.receipts().await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tenant, *tenant.as_uuid());
    assert!(app.metrics().await.contains(r#"doorman_claims_total{outcome="duplicate"} 3"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_arriving_while_the_first_dispatch_runs_is_answered_and_not_dispatched() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    app.agent.close_gate();

    assert_eq!(app.event("T1", "EvHeld", None).await.status(), 200);
    app.agent.wait_until("the first dispatch to be held", WAIT, |a| a.in_flight() == 1).await;
    // The first dispatch stays held for the rest of the test: a retry blocked on the first
    // delivery's claim would never be answered, so answering at all (inside Slack's 3 s,
    // with margin for a loaded machine) is the check.
    let started = std::time::Instant::now();
    assert_eq!(app.event("T1", "EvHeld", Some(1)).await.status(), 200);
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "answered inside the deadline: {:?}",
        started.elapsed()
    );
    // Dispatches are counted before the answer: a dispatched retry would make this 2.
    assert_eq!(app.dispatches_in_flight().await, 1, "the retry was not dispatched");
    assert_eq!(app.receipts().await[0].handled_at, None, "still in flight");

    app.agent.open_gate();
    app.quiesce().await;
    assert!(app.receipts().await[0].handled_at.is_some());
    assert_eq!(app.agent.count_for("EvHeld"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_and_interactions_dispatch_every_time_and_write_no_receipt() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;

    for _ in 0..2 {
        assert_eq!(app.command("T1").await.status(), 200);
        assert_eq!(app.interaction("T1").await.status(), 200);
    }
    app.quiesce().await;

    let kinds: Vec<String> =
        app.agent.received().iter().map(|r| r.document["kind"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "slash_command").count(), 2);
    assert_eq!(kinds.iter().filter(|k| *k == "interaction").count(), 2);
    assert!(app.receipts().await.is_empty());
    let command = app.agent.received().into_iter().find(|r| r.document["kind"] == "slash_command").unwrap();
    assert_eq!(command.document["payload"]["text"], "paris", "form fields forwarded as JSON");
    assert_eq!(command.document["external_event_id"], serde_json::Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_event_id_for_two_tenants_dispatches_once_for_each() {
    let app = TestApp::spawn().await;
    let a = app.tenant("TA").await;
    let b = app.tenant("TB").await;

    assert_eq!(app.event("TA", "EvSame", None).await.status(), 200);
    assert_eq!(app.event("TB", "EvSame", None).await.status(), 200);
    assert_eq!(app.event("TA", "EvSame", Some(1)).await.status(), 200);
    app.quiesce().await;

    let tenants: Vec<String> =
        app.agent.received().iter().map(|r| r.document["tenant_id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(tenants.len(), 2);
    assert!(tenants.contains(&a.to_string()) && tenants.contains(&b.to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handled_at_is_set_once_the_agent_answers() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    app.agent.close_gate();

    app.event("T1", "EvDone", None).await;
    app.agent.wait_until("held", WAIT, |a| a.in_flight() == 1).await;
    assert_eq!(app.receipts().await[0].handled_at, None);
    app.agent.open_gate();
    let rows = app.wait_for_receipts("handled_at", |rows| rows[0].handled_at.is_some()).await;
    assert_eq!(rows[0].failure, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_older_than_the_retention_is_deleted_when_the_next_event_of_that_tenant_completes() {
    let app = TestApp::spawn_with(&["--receipt-retention", "1h"]).await;
    let a = app.tenant("TA").await;
    let b = app.tenant("TB").await;
    let mut owner = app.db.owner().await;
    for (tenant, id) in [(a, "OldA"), (b, "OldB")] {
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, handled_at) \
             VALUES ('{tenant}', 'slack', '{id}', 'message', 0, now() - interval '2 hours', now() - interval '2 hours')"
        ))
        .execute(&mut owner)
        .await
        .unwrap();
    }

    app.event("TA", "EvNew", None).await;
    let rows = app
        .wait_for_receipts("the new event handled", |rows| {
            rows.iter().any(|r| r.event_id == "EvNew" && r.handled_at.is_some())
        })
        .await;
    let ids: Vec<&str> = rows.iter().map(|r| r.event_id.as_str()).collect();
    assert!(!ids.contains(&"OldA"), "tenant A's expired receipt was pruned: {ids:?}");
    assert!(ids.contains(&"OldB"), "tenant B's is untouched until B completes something: {ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_workspace_gets_200_writes_no_receipt_and_dispatches_nothing() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;

    assert_eq!(app.event("TUNKNOWN", "Ev1", None).await.status(), 200);
    assert_eq!(app.command("TUNKNOWN").await.status(), 200);
    app.quiesce().await;

    assert!(app.receipts().await.is_empty());
    assert_eq!(app.agent.requests(), 0);
    assert!(app.metrics().await.contains("doorman_unknown_workspaces_total 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_answered_503_while_paused_writes_nothing_and_its_retry_dispatches_once() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await;
    app.db.operator().pause(tenant, true).await.unwrap();

    assert_eq!(app.event("T1", "EvPaused", None).await.status(), 503);
    assert!(app.receipts().await.is_empty(), "nothing written");
    assert_eq!(app.agent.requests(), 0);

    // The resume reaches the server by a notice, in milliseconds; Slack's retries keep coming
    // until one is taken, and each refused one writes nothing.
    app.db.operator().pause(tenant, false).await.unwrap();
    app.retry_until_taken("T1", "EvPaused").await;
    assert_eq!(app.event("T1", "EvPaused", Some(9)).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.count_for("EvPaused"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_answered_503_while_the_circuit_is_open_writes_nothing_and_its_retry_dispatches_once() {
    // A cooldown long enough that the circuit cannot close between the checks below on a
    // loaded machine; the retry then arrives, as Slack's would, until it is taken.
    let app = TestApp::spawn_with(&["--circuit-failures", "2", "--circuit-cooldown", "3s"]).await;
    app.tenant("T1").await;
    app.agent.answer_with(500);
    for id in ["EvFail1", "EvFail2"] {
        assert_eq!(app.event("T1", id, None).await.status(), 200);
    }
    app.quiesce().await;
    assert_eq!(app.receipts().await.iter().filter(|r| r.failure.is_some()).count(), 2);

    assert_eq!(app.event("T1", "EvLater", None).await.status(), 503, "the circuit is open");
    assert_eq!(app.receipts().await.len(), 2, "nothing written for the refused delivery");
    assert!(app.metrics().await.contains("doorman_open_circuits 1"));

    app.agent.answer_with(200);
    app.retry_until_taken("T1", "EvLater").await;
    app.quiesce().await;
    assert_eq!(app.event("T1", "EvLater", Some(9)).await.status(), 200, "now a duplicate");
    app.quiesce().await;
    assert_eq!(app.agent.count_for("EvLater"), 1);
    assert_eq!(app.agent.count_for("EvFail1"), 0, "failed events are not re-sent: at most once");
}

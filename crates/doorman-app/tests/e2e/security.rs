//! Secrets stay secret; tenants stay apart.

use std::process::Command;

use diesel_async::RunQueryDsl;

use crate::helpers::{AGENT_SECRET, SIGNING_SECRET, TestApp, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_in_logs_or_error_bodies() {
    // The binary at debug level: its logs are this test's alone, and as verbose as they get.
    let app = TestApp::spawn_process(&[]).await;
    app.tenant("T1").await;
    let mut bodies = Vec::new();
    // A good delivery, a forged one, a retry, a duplicate, an unknown workspace, a failing agent.
    for (team, id, attempt) in [("T1", "EvS1", None), ("T1", "EvS1", Some(1)), ("TX", "EvS2", None)] {
        bodies.push(app.event(team, id, attempt).await.text().await.unwrap());
    }
    let forged = app
        .post_signed(
            "/slack/events",
            "application/json",
            b"{}",
            None,
            chrono::Utc::now().timestamp(),
            "v0=00",
        )
        .await;
    bodies.push(forged.text().await.unwrap());
    app.agent.answer_with(500);
    bodies.push(app.event("T1", "EvS3", None).await.text().await.unwrap());
    app.quiesce().await;
    assert!(app.receipts().await.iter().any(|r| r.failure.is_some()));
    bodies.push(app.metrics().await);

    let agent_key = AGENT_SECRET.trim_start_matches("whsec_");
    let logs = app.logs();
    assert!(logs.contains("EvS3") && logs.contains("dispatch failed"), "the process did log: {logs}");
    let encryption_key = doorman_testkit::database::TEST_KEYS.trim_start_matches("test:");
    for secret in [SIGNING_SECRET, AGENT_SECRET, agent_key, encryption_key] {
        assert!(!logs.contains(secret), "a secret reached the logs");
        assert!(bodies.iter().all(|b| !b.contains(secret)), "a secret reached a response body");
    }
}

#[test]
fn the_database_password_never_appears_in_errors_or_help() {
    let url = "postgres://doorman:hunter2-password@127.0.0.1:1/doorman";
    let migrate =
        Command::new(env!("CARGO_BIN_EXE_doorman")).arg("migrate").env("DATABASE_URL", url).output().unwrap();
    assert!(!migrate.status.success());
    let help = Command::new(env!("CARGO_BIN_EXE_doorman"))
        .args(["serve", "--help"])
        .env("DATABASE_URL", url)
        .env("SLACK_SIGNING_SECRET", "help-must-not-show-this")
        .output()
        .unwrap();
    let listing = Command::new(env!("CARGO_BIN_EXE_doorman"))
        .args(["receipts", "stranded"])
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    for output in [&migrate, &help, &listing] {
        let text =
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("help-must-not-show-this"), "{text}");
    }
    assert!(String::from_utf8_lossy(&migrate.stderr).contains("error:"), "a clear error is still printed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_events_never_complete_fail_or_prune_another_tenants_receipts() {
    let app = TestApp::spawn_with(&["--receipt-retention", "1h"]).await;
    let a = app.tenant("TA").await;
    let b = app.tenant("TB").await;
    // Tenant B holds receipts with the very ids A is about to use, unhandled and expired.
    let mut owner = app.db.owner().await;
    for id in ["EvShared", "EvFails"] {
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{b}', 'slack', '{id}', 'message', 0, now() - interval '2 hours')"
        ))
        .execute(&mut owner)
        .await
        .unwrap();
    }

    assert_eq!(app.event("TA", "EvShared", None).await.status(), 200);
    app.agent.wait_until("A's dispatch", WAIT, |ag| ag.count_for("EvShared") == 1).await;
    app.agent.answer_with(500);
    assert_eq!(app.event("TA", "EvFails", None).await.status(), 200);
    app.wait_for_receipts("A's failure", |rows| {
        rows.iter().any(|r| r.tenant == *a.as_uuid() && r.event_id == "EvFails" && r.failure.is_some())
    })
    .await;
    app.quiesce().await;

    let rows = app.receipts().await;
    let of_b: Vec<_> = rows.iter().filter(|r| r.tenant == *b.as_uuid()).collect();
    assert_eq!(of_b.len(), 2, "B's expired receipts were not pruned by A's completion: {rows:?}");
    assert!(of_b.iter().all(|r| r.handled_at.is_none() && r.failure.is_none()), "B's untouched: {of_b:?}");
    let of_a: Vec<_> = rows.iter().filter(|r| r.tenant == *a.as_uuid()).collect();
    assert_eq!(of_a.len(), 2);
}

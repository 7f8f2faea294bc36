//! Slack's protocol at the door: challenge, signatures, timestamps.

use chrono::Utc;
use doorman_testkit::slack::sign;

use crate::helpers::{SIGNING_SECRET, TestApp, event_body};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_verification_answers_the_challenge() {
    let app = TestApp::spawn().await;
    let body = br#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let response = app.post("/slack/events", "application/json", body, None).await;
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        answer,
        serde_json::json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_signature_or_a_stale_timestamp_gets_401_and_nothing_happens() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    let body = event_body("T1", "Ev1");
    let now = Utc::now().timestamp();

    let wrong_secret = sign("not-the-secret", now, body.as_bytes());
    let response =
        app.post_signed("/slack/events", "application/json", body.as_bytes(), None, now, &wrong_secret).await;
    assert_eq!(response.status(), 401);
    assert_eq!(response.text().await.unwrap(), r#"{"error":"invalid request"}"#);

    let stale = now - 301;
    let signed_stale = sign(SIGNING_SECRET, stale, body.as_bytes());
    let response = app
        .post_signed("/slack/events", "application/json", body.as_bytes(), None, stale, &signed_stale)
        .await;
    assert_eq!(response.status(), 401);

    app.quiesce().await;
    assert!(app.receipts().await.is_empty());
    assert_eq!(app.agent.requests(), 0);
    let metrics = app.metrics().await;
    assert!(metrics.contains(r#"doorman_rejections_total{cause="mismatch"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"doorman_rejections_total{cause="stale_timestamp"} 1"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_answer_metrics_on_their_own_address_only() {
    let app = TestApp::spawn().await;
    for (base, path, needle) in [
        (&app.base, "/healthz", "ok"),
        (&app.base, "/readyz", "ready"),
        (&app.metrics_base, "/metrics", "doorman_open_circuits"),
    ] {
        let response = app.http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert!(response.text().await.unwrap().contains(needle), "{path}");
    }
    // Not on the listener Slack reaches; and the metrics listener serves nothing else.
    let public = app.http.get(format!("{}/metrics", app.base)).send().await.unwrap();
    assert_eq!(public.status(), 404);
    let other = app.http.get(format!("{}/healthz", app.metrics_base)).send().await.unwrap();
    assert_eq!(other.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_database_down_the_process_is_alive_not_ready_and_answers_503() {
    crate::helpers::init_logs();
    // Port 1 on loopback: nothing listens. The server still starts (connections are lazy).
    let config = crate::helpers::serve_config(
        "postgres://postgres@127.0.0.1:1/doorman",
        &["--db-acquire-timeout", "300ms"],
    );
    let server = doorman_app::slack::start(config).await.expect("starts without its database");
    let base = format!("http://{}", server.addr());
    let http = crate::helpers::http_client();

    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    assert_eq!(ready.json::<serde_json::Value>().await.unwrap()["reason"], "database unavailable");

    assert_eq!(crate::helpers::post_event(&http, &base, "T1", "EvNoDb").await, 503);
    assert_eq!(server.shutdown().await.unfinished, 0);
}

//! Bad input, one test per row: each gets its status and a short reason, never a panic,
//! and nothing is written or dispatched.

use std::time::Duration;

use chrono::Utc;
use diesel_async::RunQueryDsl;
use doorman_testkit::slack::sign;

use crate::helpers::{SIGNING_SECRET, TestApp, WAIT, event_body, raw_request, signature_headers};

const JSON: &str = "application/json";

/// The app with tenant T1 set up.
async fn app() -> TestApp {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    app
}

/// Nothing was claimed, nothing dispatched.
async fn assert_untouched(app: &TestApp) {
    app.quiesce().await;
    assert!(app.receipts().await.is_empty(), "nothing written");
    assert_eq!(app.agent.requests(), 0, "nothing dispatched");
}

async fn assert_answer(response: reqwest::Response, status: u16, reason: &str) {
    assert_eq!(response.status(), status);
    let body: serde_json::Value = response.json().await.expect("a JSON reason");
    assert_eq!(body["error"], reason);
}

/// A valid event body for T1 sent with these signature headers.
async fn with_signature(app: &TestApp, timestamp: &str, signature: &str) -> reqwest::Response {
    app.http
        .post(format!("{}/slack/events", app.base))
        .header("content-type", JSON)
        .header("x-slack-request-timestamp", timestamp)
        .header("x-slack-signature", signature)
        .body(event_body("T1", "Ev1"))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_signature_headers_get_401() {
    let app = app().await;
    let response = app
        .http
        .post(format!("{}/slack/events", app.base))
        .header("content-type", JSON)
        .body(event_body("T1", "Ev1"))
        .send()
        .await
        .unwrap();
    assert_answer(response, 401, "invalid request").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_hex_signature_gets_401() {
    let app = app().await;
    let signature = format!("v0={}", "zz".repeat(32));
    assert_answer(
        with_signature(&app, &Utc::now().timestamp().to_string(), &signature).await,
        401,
        "invalid request",
    )
    .await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_signature_gets_401() {
    let app = app().await;
    let now = Utc::now().timestamp();
    let v0 = sign(SIGNING_SECRET, now, event_body("T1", "Ev1").as_bytes());
    let v1 = v0.replacen("v0=", "v1=", 1);
    assert_answer(with_signature(&app, &now.to_string(), &v1).await, 401, "invalid request").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timestamp_301_seconds_away_either_way_gets_401() {
    let app = app().await;
    for offset in [-301, 301] {
        let timestamp = Utc::now().timestamp() + offset;
        let signature = sign(SIGNING_SECRET, timestamp, event_body("T1", "Ev1").as_bytes());
        assert_answer(with_signature(&app, &timestamp.to_string(), &signature).await, 401, "invalid request")
            .await;
    }
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_numeric_timestamp_gets_401() {
    let app = app().await;
    let signature = sign(SIGNING_SECRET, 0, event_body("T1", "Ev1").as_bytes());
    assert_answer(with_signature(&app, "yesterday", &signature).await, 401, "invalid request").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_announced_over_the_limit_gets_413_without_being_read() {
    let app = TestApp::spawn_with(&["--max-body-bytes", "4096"]).await;
    app.tenant("T1").await;
    // 100 MB announced, 10 bytes sent, then nothing: the answer cannot wait for the rest.
    let request = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{\"type\":1}";
    let answer = raw_request(&app.base, request, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_body_growing_over_the_limit_gets_413_without_being_read() {
    let app = TestApp::spawn_with(&["--max-body-bytes", "4096"]).await;
    app.tenant("T1").await;
    // No length announced: 5000 bytes in chunks, then a stall that never ends the body.
    let mut request = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..5 {
        request.extend_from_slice(b"3e8\r\n");
        request.extend_from_slice(&[b'a'; 1000]);
        request.extend_from_slice(b"\r\n");
    }
    let answer = raw_request(&app.base, &request, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_json_after_a_valid_signature_gets_400() {
    let app = app().await;
    let response = app.post("/slack/events", JSON, b"{\"type\": \"event_callback\", ", None).await;
    assert_answer(response, 400, "body is not a valid Events API envelope").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_callback_without_event_id_gets_400() {
    let app = app().await;
    let mut body: serde_json::Value = serde_json::from_str(&event_body("T1", "Ev1")).unwrap();
    body.as_object_mut().unwrap().remove("event_id");
    let response = app.post("/slack/events", JSON, body.to_string().as_bytes(), None).await;
    assert_answer(response, 400, "event_callback without event_id").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_id_of_10000_characters_gets_400() {
    let app = app().await;
    let response = app.event("T1", &"E".repeat(10_000), None).await;
    assert_answer(response, 400, "event_id is not a valid id").await;
    assert_untouched(&app).await;
}

/// `.` and `..` are path steps in every URL an event opens at (console, admin API), so they are
/// never stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_id_that_is_a_path_step_gets_400() {
    let app = app().await;
    for id in [".", ".."] {
        let response = app.event("T1", id, None).await;
        assert_answer(response, 400, "event_id is not a valid id").await;
    }
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_utf8_body_gets_400() {
    let app = app().await;
    let response =
        app.post("/slack/events", JSON, b"{\"type\":\"event_callback\",\"x\":\"\xff\xfe\"}", None).await;
    assert_eq!(response.status(), 400);
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_content_type_gets_415() {
    let app = app().await;
    let response = app.post("/slack/events", "text/plain", event_body("T1", "Ev1").as_bytes(), None).await;
    assert_answer(response, 415, "unsupported content type").await;
    let response = app.post("/slack/commands", JSON, b"{}", None).await;
    assert_answer(response, 415, "unsupported content type").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbled_retry_numbers_are_treated_as_zero() {
    let app = app().await;
    for (i, garbage) in ["abc", "-1", "99999999999"].into_iter().enumerate() {
        let body = event_body("T1", &format!("EvGarbled{i}"));
        let now = Utc::now().timestamp();
        let response = app
            .http
            .post(format!("{}/slack/events", app.base))
            .header("content-type", JSON)
            .header("x-slack-request-timestamp", now.to_string())
            .header("x-slack-signature", sign(SIGNING_SECRET, now, body.as_bytes()))
            .header("x-slack-retry-num", garbage)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{garbage}");
    }
    app.agent.wait_until("three dispatches", WAIT, |a| a.count() == 3).await;
    let rows = app.receipts().await;
    assert!(rows.iter().all(|r| r.attempt == 0), "{rows:?}");
    assert!(app.agent.received().iter().all(|r| r.document["delivery"]["attempt"] == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_in_the_retry_reason_never_reach_a_log() {
    // The binary, so its logs are this test's alone.
    let app = TestApp::spawn_process(&[]).await;
    app.tenant("T1").await;
    let body = event_body("T1", "EvControl");
    // Bytes the HTTP parser accepts in a header value (a tab and obs-text), so the request
    // reaches Doorman: a C1 control (U+0085, NEXT LINE) and U+202E (RIGHT-TO-LEFT OVERRIDE).
    let request = [
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec(),
        signature_headers(body.as_bytes()).into_bytes(),
        b"X-Slack-Retry-Num: 1\r\nX-Slack-Retry-Reason: http_timeout\t\xc2\x85FORGED\xe2\x80\xae\r\n"
            .to_vec(),
        format!("Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes(),
    ]
    .concat();
    let answer = raw_request(&app.base, &request, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    app.quiesce().await;

    let received = app.agent.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].document["delivery"]["retry_reason"], "other", "read as a hint, not kept");
    let logs = app.logs();
    assert!(logs.contains("EvControl"), "the process logged the delivery at debug level");
    for raw in ["FORGED", "\u{85}", "\u{202e}", "\t\u{85}"] {
        assert!(!logs.contains(raw), "raw header text {raw:?} reached a log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_envelope_type_gets_400_and_asks_slack_not_to_retry() {
    let app = app().await;
    let response =
        app.post("/slack/events", JSON, br#"{"type":"brand_new_envelope","team_id":"T1"}"#, None).await;
    assert_eq!(response.headers().get("x-slack-no-retry").map(|v| v.as_bytes()), Some(&b"1"[..]));
    assert_answer(response, 400, "unsupported envelope type").await;
    assert_untouched(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_metacharacters_and_unicode_in_ids_are_stored_verbatim() {
    let app = TestApp::spawn().await;
    let team = "T✓'; DROP TABLE tenants; --";
    // Operators link only Slack's form of an id (T and upper-case letters and digits); a link
    // stored otherwise (a hand edit, an older release) still matches what Slack sends, verbatim.
    let tenant = app.tenant("TSQL").await;
    diesel::sql_query("UPDATE messaging_workspaces SET team_id = $1 WHERE tenant_id = $2")
        .bind::<diesel::sql_types::Text, _>(team)
        .bind::<diesel::sql_types::Uuid, _>(tenant.as_uuid())
        .execute(&mut app.db.owner().await)
        .await
        .unwrap();
    let refused = app.db.operator().link(tenant, Some(team), None).await.unwrap_err();
    assert!(matches!(refused, doorman_domain::OperatorError::Invalid(_)), "{refused:?}");
    let event_id = "Ev'); DELETE FROM messaging_event_receipts; --";

    assert_eq!(app.event(team, event_id, None).await.status(), 200);
    app.agent.wait_until("the dispatch", WAIT, |a| a.count_for(event_id) == 1).await;
    let rows = app.wait_for_receipts("handled", |rows| rows.iter().any(|r| r.handled_at.is_some())).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].event_id, event_id);
    assert_eq!(app.agent.received()[0].document["workspace"]["team_id"], team);
    assert_eq!(app.event(team, event_id, Some(1)).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.count_for(event_id), 1, "still deduplicated by the verbatim id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_agent_url_that_does_not_parse_answers_503_and_claims_nothing() {
    let app = TestApp::spawn().await;
    let tenant = app.tenant("T1").await;
    // Past the operator's checks, as a hand edit or an older row would be.
    diesel::sql_query("UPDATE agent_bridges SET url = 'http//agent without a scheme' WHERE tenant_id = $1")
        .bind::<diesel::sql_types::Uuid, _>(tenant.as_uuid())
        .execute(&mut app.db.owner().await)
        .await
        .unwrap();

    for attempt in [None, Some(1)] {
        let refused = app.event("T1", "EvBadUrl", attempt).await;
        assert_eq!(refused.status(), 503);
        let body: serde_json::Value = refused.json().await.expect("a JSON reason");
        assert_eq!(
            (body["error"].as_str(), body["reason"].as_str()),
            (Some("unavailable"), Some("misconfigured"))
        );
    }
    assert!(app.receipts().await.is_empty(), "nothing claimed, so Slack's retry is handled once fixed");
    assert_eq!(app.agent.requests(), 0);
    assert!(app.metrics().await.contains(r#"doorman_unavailable_total{reason="misconfigured"} 2"#));
}

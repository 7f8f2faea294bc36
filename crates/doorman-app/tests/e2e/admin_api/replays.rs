//! Events listed by state, time and type, and replays as jobs over the admin API: a replay
//! answers 202 with its job, an admin process sends its events one at a time, the job shows
//! each outcome, the audit trail records each event's, an event's document shows every
//! dispatch, and a job left by a process that stopped is resumed.

use std::time::Duration;

use doorman_testkit::FakeAgent;
use doorman_testkit::database::TestDatabase;
use doorman_testkit::slack::sign;
use serde_json::{Value, json};

use super::{Admin, key, problem};
use crate::helpers::{AGENT_SECRET, SIGNING_SECRET, WAIT, http_client, serve_config};

/// A signed event of `event_type` from `team`.
async fn post(base: &str, team: &str, id: &str, event_type: &str) -> u16 {
    let body = json!({
        "type": "event_callback", "team_id": team, "api_app_id": "A1", "event_id": id, "event_time": 1,
        "event": {"type": event_type, "event_ts": "1.1"},
        "authorizations": [{"team_id": team, "user_id": "U1", "is_bot": true, "is_enterprise_install": false}]
    })
    .to_string();
    let now = chrono::Utc::now().timestamp();
    http_client()
        .post(format!("{base}/slack/events"))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", sign(SIGNING_SECRET, now, body.as_bytes()))
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The event ids of a listing.
fn ids(page: &Value) -> Vec<&str> {
    let mut ids: Vec<&str> =
        page["items"].as_array().unwrap().iter().map(|e| e["external_event_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_events_are_replayed_as_a_job_whose_every_outcome_is_shown_and_audited() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let t = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&t("/workspaces"), &root, json!({"team_id": "TREPLAY"})).await.status, 201);
    let set =
        admin.put(&t("/agent"), &root, json!({"url": agent.url(), "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200);
    assert_eq!(admin.put(&t("/retain-payloads"), &root, json!({"enabled": true})).await.status, 200);
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());

    // Three events fail (the agent answers 500), one is handled, one stays in flight.
    agent.answer_with(500);
    for (id, kind) in [("EvR1", "app_mention"), ("EvR2", "app_mention"), ("EvR3", "reaction_added")] {
        assert_eq!(post(&base, "TREPLAY", id, kind).await, 200);
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while ids(&admin.get(&t("/events?state=failed"), &root).await.body).len() < 3 {
        assert!(tokio::time::Instant::now() < deadline, "the events never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    agent.answer_with(200);
    assert_eq!(post(&base, "TREPLAY", "EvOk", "app_mention").await, 200);

    // Listings by state, type and time.
    let list = |query: &str| {
        let path = t(&format!("/events?{query}"));
        let (admin, root) = (&admin, &root);
        async move { admin.get(&path, root).await }
    };
    assert_eq!(ids(&list("state=failed").await.body), ["EvR1", "EvR2", "EvR3"]);
    assert_eq!(ids(&list("state=failed&type=reaction_added").await.body), ["EvR3"]);
    let deadline = tokio::time::Instant::now() + WAIT;
    while ids(&list("state=handled").await.body) != ["EvOk"] {
        assert!(tokio::time::Instant::now() < deadline, "EvOk never read handled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held at the agent: in flight.
    agent.close_gate();
    assert_eq!(post(&base, "TREPLAY", "EvHeld", "app_mention").await, 200);
    assert_eq!(ids(&list("state=in_flight").await.body), ["EvHeld"]);
    assert!(ids(&list("state=stranded").await.body).is_empty());
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let earlier = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let encode = |at: &str| at.replace('+', "%2B");
    assert!(ids(&list(&format!("state=failed&since={}", encode(&later))).await.body).is_empty());
    assert!(ids(&list(&format!("state=handled&until={}", encode(&earlier))).await.body).is_empty());
    assert_eq!(
        ids(&list(&format!("state=handled&since={}&until={}", encode(&earlier), encode(&later))).await.body),
        ["EvOk"]
    );
    problem(&list("state=lost").await, 422, Some("state"));
    problem(&list("state=handled&until=tomorrow").await, 422, Some("until"));
    agent.open_gate();

    // A read-only key may ask what a replay would do, not start one.
    let reader = key(&db, Some(&tenant), true).await;
    let since = json!({"failed_since": earlier});
    let dry = admin.post(&t("/replays"), &reader, json!({"failed_since": earlier, "dry_run": true})).await;
    assert_eq!((dry.status.as_u16(), dry.body["selected"].as_u64()), (200, Some(3)), "{dry:?}");
    problem(&admin.post(&t("/replays"), &reader, since.clone()).await, 403, None);

    // A bulk retry by the list's filter or by the events chosen, previewed: how many, which.
    let preview = |body: serde_json::Value| {
        let (admin, reader, path) = (&admin, &reader, t("/replays"));
        async move {
            let answer = admin.post(&path, reader, body).await;
            assert_eq!(answer.status, 200, "{answer:?}");
            assert_eq!(answer.body["dry_run"], true);
            let events: Vec<(String, String)> = answer.body["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (e["external_event_id"].as_str().unwrap().into(), e["outcome"].as_str().unwrap().into())
                })
                .collect();
            events
        }
    };
    let would = |ids: &[&str]| -> Vec<(String, String)> {
        ids.iter().map(|id| ((*id).to_owned(), "would_replay".to_owned())).collect()
    };
    let by_type = json!({"filter": {"state": "failed", "type": "app_mention"}, "dry_run": true});
    assert_eq!(preview(by_type).await, would(&["EvR1", "EvR2"]), "the failed list's filter by type");
    let window = json!({"filter": {"state": "failed", "since": earlier, "until": later}, "limit": 2.0, "dry_run": true});
    assert_eq!(preview(window).await, would(&["EvR1", "EvR2"]), "a window, and at most the limit");
    let none = json!({"filter": {"state": "stranded"}, "dry_run": true});
    assert!(preview(none).await.is_empty(), "none is stranded");
    let dots = json!({"event_ids": [".", ".."], "dry_run": true});
    assert!(preview(dots).await.is_empty(), "`.` and `..` name no event");
    let chosen = json!({"event_ids": ["EvR3", "EvOk", "EvNever", "EvR3"], "dry_run": true});
    let words = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs.iter().map(|(id, outcome)| ((*id).to_owned(), (*outcome).to_owned())).collect()
    };
    assert_eq!(
        preview(chosen).await,
        words(&[("EvR3", "would_replay"), ("EvOk", "already_handled"), ("EvNever", "unknown")]),
        "each chosen event once, a handled one and a missing one refused by name"
    );
    for (body, field) in [
        (json!({"filter": {"state": "handled"}, "dry_run": true}), "state"),
        (json!({"filter": {"state": "lost"}, "dry_run": true}), "state"),
        (json!({"filter": {"state": "failed"}, "limit": 0, "dry_run": true}), "limit"),
        (json!({"filter": {"state": "failed"}, "limit": 1001, "dry_run": true}), "limit"),
        (json!({"filter": {"state": "failed"}, "limit": 5_000_000_000_u64, "dry_run": true}), "limit"),
        (json!({"filter": {"state": "failed", "since": "yesterday"}, "dry_run": true}), "since"),
        (json!({"event_ids": [], "dry_run": true}), "event_ids"),
        (json!({"event_ids": [""], "dry_run": true}), "event_ids"),
    ] {
        problem(&admin.post(&t("/replays"), &reader, body.clone()).await, 422, Some(field));
    }
    let by_filter = json!({"filter": {"state": "failed", "since": earlier}});
    problem(&admin.post(&t("/replays"), &reader, by_filter.clone()).await, 403, None);
    assert_eq!(agent.count_for("EvR1"), 0, "nothing was sent");

    // The replay: a job by the list's filter, answered at once, run in the background.
    let job = admin.replayed(&t("/replays"), &root, by_filter).await;
    assert!(job["selection"].as_str().unwrap().starts_with("failed events, since "), "{job}");
    assert_eq!(
        (job["total"].as_u64(), job["done"].as_u64(), job["succeeded"].as_u64()),
        (Some(3), Some(3), Some(3)),
        "{job}"
    );
    let outcomes: Vec<(&str, &str)> = job["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["external_event_id"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(outcomes, [("EvR1", "handled"), ("EvR2", "handled"), ("EvR3", "handled")]);
    assert_eq!(job["requested_by"]["kind"], "key");
    for id in ["EvR1", "EvR2", "EvR3"] {
        assert_eq!(agent.count_for(id), 1, "{id} once");
    }
    let job_id = job["id"].as_str().unwrap();
    let listed = admin.get(&t("/replays"), &root).await;
    assert_eq!(listed.body["items"][0]["id"], job_id, "{listed:?}");

    // The event's document: its live dispatch failed, the job's replay handled it.
    let event = admin.get(&t("/events/EvR1"), &root).await;
    assert_eq!(event.body["status"], "handled");
    let attempts = event.body["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{event:?}");
    assert_eq!(
        (attempts[0]["kind"].as_str(), attempts[0]["outcome"].as_str()),
        (Some("live"), Some("failed"))
    );
    assert!(attempts[0]["detail"].as_str().unwrap().contains("500"), "{event:?}");
    // Every attempt on record says what the agent answered, and when, to the millisecond.
    assert_eq!(
        (attempts[0]["status"].as_u64(), attempts[0]["failure"].as_str(), attempts[0]["answer"].as_str()),
        (Some(500), Some("status"), Some(r#"{"error":"the agent answered 500"}"#)),
        "{event:?}"
    );
    assert_eq!(
        (attempts[1]["kind"].as_str(), attempts[1]["outcome"].as_str(), attempts[1]["job_id"].as_str()),
        (Some("replay"), Some("handled"), Some(job_id))
    );
    assert_eq!((attempts[1]["status"].as_u64(), &attempts[1]["answer"]), (Some(200), &json!(null)));
    for attempt in attempts {
        assert!(attempt["latency_ms"].as_i64().is_some_and(|ms| ms >= 0), "{attempt}");
        let started: chrono::DateTime<chrono::Utc> = attempt["started_at"].as_str().unwrap().parse().unwrap();
        let ended: chrono::DateTime<chrono::Utc> = attempt["ended_at"].as_str().unwrap().parse().unwrap();
        assert!(started <= ended, "{attempt}");
    }
    let handled = admin.get(&t("/events/EvOk"), &root).await;
    let first = &handled.body["attempts"][0];
    assert_eq!(
        (first["kind"].as_str(), first["outcome"].as_str(), first["status"].as_u64()),
        (Some("live"), Some("handled"), Some(200)),
        "a first delivery is read from its receipt: {handled:?}"
    );

    // The trail: the job, then each event's outcome.
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    let entries: Vec<(&str, &str)> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().is_some_and(|a| a.contains("replay")))
        .map(|e| (e["action"].as_str().unwrap(), e["target"].as_str().unwrap()))
        .collect();
    assert_eq!(entries.len(), 4, "{entries:?}");
    assert!(
        entries[3].0 == "events.replay"
            && entries[3].1.contains(job_id)
            && entries[3].1.contains("(3 events)")
            && entries[3].1.contains(": failed events, since "),
        "{entries:?}"
    );
    for (action, target) in &entries[..3] {
        assert_eq!(*action, "event.replay");
        assert!(target.contains(": handled (job ") && target.contains(job_id), "{target}");
    }

    // Another tenant's key cannot read the job: 404, like a job that does not exist.
    let other = admin.tenant(&root, "Other").await;
    let stranger = key(&db, Some(&other), false).await;
    problem(&admin.get(&t(&format!("/replays/{job_id}")), &stranger).await, 404, None);
    problem(&admin.get(&format!("/admin/v1/tenants/{other}/replays/{job_id}"), &root).await, 404, None);
    server.shutdown().await;
}

/// A job whose process stopped holding it (its hold lapsed with events still to do) is taken
/// by a running admin process, which sends only what has no outcome yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_left_by_a_process_that_stopped_is_resumed_where_it_stopped() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let job = uuid::Uuid::new_v4();
    // As a process leaves it: started, one event done, its hold lapsed a moment ago.
    diesel_async::SimpleAsyncConnection::batch_execute(&mut db.owner().await, &format!(
        "INSERT INTO admin_replay_jobs (id, tenant_id, selection, actor_kind, actor_id, actor_name, request_id, started_at, runner_until) \
         VALUES ('{job}', '{tenant}', 'failed since then', 'cli', 'ops', 'cli', 'req-1', now() - interval '5 minutes', now() - interval '1 second'); \
         INSERT INTO admin_replay_job_events (job_id, position, tenant_id, platform, external_event_id, started_at, ended_at, outcome, detail) \
         VALUES ('{job}', 0, '{tenant}', 'slack', 'EvDone', now(), now(), 'handled', 'sent again'), \
                ('{job}', 1, '{tenant}', 'slack', 'EvLeft', NULL, NULL, NULL, NULL)"
    ))
    .await
    .unwrap();
    let path = format!("/admin/v1/tenants/{tenant}/replays/{job}");
    let deadline = tokio::time::Instant::now() + WAIT;
    let finished = loop {
        let read = admin.get(&path, &root).await;
        if read.body["state"] == "finished" {
            break read.body;
        }
        assert!(tokio::time::Instant::now() < deadline, "never resumed: {read:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let outcomes: Vec<&str> =
        finished["events"].as_array().unwrap().iter().map(|e| e["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["handled", "unknown"], "the recorded event kept, the other tried: {finished}");
}

/// A job's events are sent on behalf of the key that asked for it, which is checked when the
/// job runs as on every request: a job still queued when its key is revoked sends nothing,
/// and says why for each event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_whose_key_was_revoked_meanwhile_sends_nothing_and_says_why() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let t = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&t("/workspaces"), &root, json!({"team_id": "TREVOKED"})).await.status, 201);
    let set =
        admin.put(&t("/agent"), &root, json!({"url": agent.url(), "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200);
    assert_eq!(admin.put(&t("/retain-payloads"), &root, json!({"enabled": true})).await.status, 200);
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    // A failed event whose payload is kept: a replay would send it.
    agent.answer_with(500);
    assert_eq!(post(&base, "TREVOKED", "EvKeyGone", "app_mention").await, 200);
    let deadline = tokio::time::Instant::now() + WAIT;
    while ids(&admin.get(&t("/events?state=failed"), &root).await.body) != ["EvKeyGone"] {
        assert!(tokio::time::Instant::now() < deadline, "the event never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    agent.answer_with(200);
    let sent_live = agent.count_for("EvKeyGone");

    // Its job, queued by a key that is revoked before any process takes the job.
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "support", "tenant_id": tenant})).await;
    assert_eq!(made.status, 201, "{made:?}");
    let asker = made.body["id"].as_str().unwrap().to_owned();
    let revoked =
        admin.call(reqwest::Method::DELETE, &format!("/admin/v1/keys/{asker}"), Some(&root), None).await;
    assert_eq!(revoked.status, 204, "{revoked:?}");
    let job = uuid::Uuid::new_v4();
    diesel_async::SimpleAsyncConnection::batch_execute(&mut db.owner().await, &format!(
        "INSERT INTO admin_replay_jobs (id, tenant_id, selection, actor_kind, actor_id, actor_name, request_id) \
         VALUES ('{job}', '{tenant}', 'event EvKeyGone', 'key', '{asker}', 'support', 'req-queued'); \
         INSERT INTO admin_replay_job_events (job_id, position, tenant_id, platform, external_event_id) \
         VALUES ('{job}', 0, '{tenant}', 'slack', 'EvKeyGone')"
    ))
    .await
    .unwrap();

    let path = t(&format!("/replays/{job}"));
    let deadline = tokio::time::Instant::now() + WAIT;
    let finished = loop {
        let read = admin.get(&path, &root).await;
        if read.body["state"] == "finished" {
            break read.body;
        }
        assert!(tokio::time::Instant::now() < deadline, "never run: {read:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let event = &finished["events"][0];
    assert_eq!(event["outcome"], "not_sent", "{finished}");
    assert!(event["detail"].as_str().unwrap().contains(&format!("({asker}) was revoked")), "{finished}");
    assert_eq!(agent.count_for("EvKeyGone"), sent_live, "nothing was sent again");
    assert_eq!(admin.get(&t("/events/EvKeyGone"), &root).await.body["status"], "failed");
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    let stopped = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "event.replay")
        .unwrap_or_else(|| panic!("the stop is audited: {trail:?}"));
    assert_eq!(stopped["actor_id"], asker.as_str(), "{stopped}");
    assert!(stopped["target"].as_str().unwrap().contains(&job.to_string()), "{stopped}");
    server.shutdown().await;
}

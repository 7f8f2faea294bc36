//! The `doorman` binary itself: several processes on one database, and graceful shutdown.

use std::time::Duration;

use doorman_testkit::database::{self, TestDatabase};
use doorman_testkit::{FakeAgent, ServeProcess};

use crate::helpers::{AGENT_SECRET, SIGNING_SECRET, WAIT, http_client, post_event, quiesce, spawn_serve};

/// `doorman serve` on `db`, one worker, quiet unless TEST_LOG is set.
fn serve(db: &TestDatabase, extra: &[&str]) -> ServeProcess {
    spawn_serve(db, "warn", &[&["--workers", "1"], extra].concat())
}

/// A server whose one dispatch (`event_id` for T1) the agent is holding at its gate.
struct Held {
    db: TestDatabase,
    agent: FakeAgent,
    server: ServeProcess,
    http: reqwest::Client,
}

impl Held {
    async fn start(flags: &[&str], event_id: &str) -> Self {
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        tenant_with_agent(&db, &agent, "T1").await;
        let server = serve(&db, flags);
        let http = http_client();
        agent.close_gate();
        assert_eq!(post_event(&http, server.base(), "T1", event_id).await, 200);
        agent.wait_until("the dispatch to be held", WAIT, |a| a.in_flight() == 1).await;
        Self { db, agent, server, http }
    }
}

async fn tenant_with_agent(db: &TestDatabase, agent: &FakeAgent, team: &str) {
    database::tenant_with_agent(&db.operator(), team, agent.url(), AGENT_SECRET).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_receiving_the_same_event_at_the_same_moment_dispatch_it_once_in_total() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&db, &agent, "T1").await;
    let first = serve(&db, &[]);
    let second = serve(&db, &[]);
    let http = http_client();

    let events: Vec<String> = (0..25).map(|i| format!("EvRace{i}")).collect();
    for id in &events {
        let (a, b) = tokio::join!(
            post_event(&http, first.base(), "T1", id),
            post_event(&http, second.base(), "T1", id)
        );
        assert_eq!((a, b), (200, 200), "{id}");
    }
    quiesce(&http, first.metrics_base()).await;
    quiesce(&http, second.metrics_base()).await;

    for id in &events {
        assert_eq!(agent.count_for(id), 1, "{id} dispatched once across both processes");
    }
    assert_eq!(agent.count(), events.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_held_dispatch_waits_for_it_within_the_drain_timeout() {
    let Held { db, agent, mut server, http } = Held::start(&["--drain-timeout", "20s"], "EvDrain").await;
    server.signal("TERM");
    assert_eq!(
        server.wait_for_exit(Duration::from_millis(700)).await,
        None,
        "still draining while the dispatch is held"
    );
    assert!(http.get(format!("{}/healthz", server.base())).send().await.is_err(), "no longer accepting");

    agent.open_gate();
    let status = server.wait_for_exit(WAIT).await.expect("exits once the dispatch finished");
    assert!(status.success(), "{status:?}");
    assert_eq!(agent.count_for("EvDrain"), 1);
    let stranded = db.operator().stranded().await;
    assert!(stranded.is_empty(), "the drained dispatch completed its receipt: {stranded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_outliving_the_drain_timeout_is_left_visibly_stranded() {
    // The agent stays alive (holding the dispatch) until the test ends.
    let Held { db, agent: _agent, mut server, http: _http } =
        Held::start(&["--drain-timeout", "300ms"], "EvCut").await;
    server.signal("TERM");
    let status = server.wait_for_exit(WAIT).await.expect("exits after the drain timeout");
    assert!(!status.success(), "a drain that left work unfinished exits non-zero");

    let stranded = db.operator().stranded().await;
    assert_eq!(stranded.len(), 1);
    assert_eq!(stranded[0].key.external_id.as_str(), "EvCut");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_dispatch_leaves_the_receipt_stranded_and_the_retry_is_a_duplicate() {
    let Held { db, agent, mut server, http } = Held::start(&[], "EvKilled").await;
    server.signal("KILL");
    server.wait_for_exit(WAIT).await.expect("killed");

    let stranded = db.operator().stranded().await;
    assert_eq!(stranded.len(), 1, "the loss is visible");
    assert_eq!(stranded[0].key.external_id.as_str(), "EvKilled");

    let restarted = serve(&db, &[]);
    agent.open_gate();
    // The held request reached the agent once (whether the agent finishes it after its
    // client died is the agent's business). A second dispatch would be a second request.
    assert_eq!(agent.requests(), 1);
    assert_eq!(post_event(&http, restarted.base(), "T1", "EvKilled").await, 200);
    quiesce(&http, restarted.metrics_base()).await;
    assert_eq!(agent.requests(), 1, "the retry is a duplicate and is not dispatched again");
    let still = db.operator().stranded().await;
    assert_eq!(still.len(), 1, "still listed for an operator to look at");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_drain_under_load_writes_every_completion() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&db, &agent, "T1").await;
    let server = serve(&db, &["--drain-timeout", "20s"]);
    let http = http_client();
    let base = server.base().to_owned();

    // 32 senders, 400 events; SIGTERM once a quarter have been accepted.
    let accepted_so_far = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders: Vec<_> = (0..32)
        .map(|_| {
            let (http, base, accepted_so_far, next) =
                (http.clone(), base.clone(), accepted_so_far.clone(), next.clone());
            tokio::spawn(async move {
                let mut accepted = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= 400 {
                        return accepted;
                    }
                    let id = format!("EvDrain{i}");
                    let status = try_post_event(&http, &base, "T1", &id).await;
                    if status == Some(200) {
                        accepted_so_far.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        accepted.push(id);
                    }
                }
            })
        })
        .collect();
    while accepted_so_far.load(std::sync::atomic::Ordering::SeqCst) < 100 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.signal("TERM");
    let mut accepted = Vec::new();
    for sender in futures_util::future::join_all(senders).await {
        accepted.extend(sender.unwrap());
    }
    let mut server = server;
    let status = server.wait_for_exit(WAIT * 3).await.expect("exits after the drain");
    assert!(status.success(), "a clean drain exits 0: {status:?}");

    assert!(accepted.len() >= 100, "{} accepted before the shutdown", accepted.len());
    let stranded = db.operator().stranded().await;
    assert!(stranded.is_empty(), "no completion left in memory: {} stranded", stranded.len());
    for id in &accepted {
        assert_eq!(agent.count_for(id), 1, "{id} acknowledged and dispatched once");
    }
}

/// Like `post_event`, but a refused or cut connection (the server shutting down) is `None`.
async fn try_post_event(http: &reqwest::Client, base: &str, team: &str, event_id: &str) -> Option<u16> {
    let body = crate::helpers::event_body(team, event_id);
    let now = chrono::Utc::now().timestamp();
    http.post(format!("{base}/slack/events"))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", doorman_testkit::slack::sign(SIGNING_SECRET, now, body.as_bytes()))
        .body(body)
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

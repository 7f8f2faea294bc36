//! Agents that keep failing (issue 41), with the `doorman` binary: a circuit that opens keeps
//! since when the tenant's agent has been failing and one that closes clears it; an agent
//! failing for longer than `DOORMAN_AGENT_DISABLE_AFTER` is disabled — paused by Doorman,
//! audited as its own, shown — and an operator's resume undoes it. The platform's operational
//! webhook (a second fake agent, checking signatures) is told of each.

use std::time::Duration;

use doorman_testkit::FakeAgent;
use doorman_testkit::database::{self, TestDatabase};
use serde_json::Value;

use crate::helpers::{AGENT_SECRET, doorman, http_client, ok, post_event, spawn_serve};

/// Two failures open a circuit for a second; an agent failing for 3 s is disabled.
const FLAGS: &[&str] =
    &["--workers", "1", "--circuit-failures", "2", "--circuit-cooldown", "1s", "--agent-disable-after", "3s"];

/// The webhook's events of `type_` for `tenant`, as it received them (signatures checked).
fn told(webhook: &FakeAgent, type_: &str, tenant: &str) -> usize {
    webhook
        .received()
        .iter()
        .filter(|r| r.document["type"] == type_ && r.document["data"]["tenant_id"] == tenant)
        .count()
}

/// `doorman serve` with `flags` and the operational webhook at `webhook`.
fn serve_told(db: &TestDatabase, webhook: &FakeAgent, flags: &[&str]) -> doorman_testkit::ServeProcess {
    let told = ["--operational-webhook-url", webhook.url(), "--operational-webhook-secret", WEBHOOK_SECRET];
    spawn_serve(db, "warn", &[flags, &told].concat())
}

const WEBHOOK_SECRET: &str = "whsec_b3BlcmF0aW9uYWwtd2ViaG9vay1zZWNyZXQ=";

fn agent_shown(db: &TestDatabase, tenant: &str) -> Value {
    serde_json::from_str(&ok(&doorman(db.url(), &["agent", "show", "--tenant", tenant, "--json"]))).unwrap()
}

/// Posts events until one is answered `status` (each a new event), at most for `within`.
async fn until_answered(base: &str, team: &str, status: u16, within: Duration) -> u16 {
    let http = http_client();
    let deadline = tokio::time::Instant::now() + within;
    let mut n = 0;
    loop {
        n += 1;
        let answered = post_event(&http, base, team, &format!("EvHealth{n}")).await;
        if answered == status || tokio::time::Instant::now() >= deadline {
            return answered;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn until_shown(
    db: &TestDatabase,
    tenant: &str,
    what: &str,
    within: Duration,
    holds: impl Fn(&Value) -> bool,
) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let shown = agent_shown(db, tenant);
        if holds(&shown) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {shown}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_agent_is_kept_failing_then_disabled_audited_and_resumed_by_an_operator() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let tenant =
        database::tenant_with_agent(&db.operator(), "THEALTH", agent.url(), AGENT_SECRET).await.to_string();
    let webhook = FakeAgent::start(WEBHOOK_SECRET);
    let server = serve_told(&db, &webhook, FLAGS);

    // Failing: the circuit opens (deliveries answered 503), and the time is kept.
    agent.answer_with(500);
    assert_eq!(until_answered(server.base(), "THEALTH", 503, Duration::from_secs(10)).await, 503);
    until_shown(&db, &tenant, "failing since is kept", Duration::from_secs(5), |a| {
        a["failing_since"].is_string()
    })
    .await;
    assert_eq!(agent_shown(&db, &tenant)["disabled_at"], Value::Null, "not yet");

    // Failing for longer than 3 s: disabled by Doorman.
    until_shown(&db, &tenant, "disabled", Duration::from_secs(15), |a| a["disabled_at"].is_string()).await;
    let shown = agent_shown(&db, &tenant);
    assert_eq!(shown["paused"], true, "{shown}");
    let trail: Value = serde_json::from_str(&ok(&doorman(db.url(), &["admin", "audit", "--json"]))).unwrap();
    let disabled: Vec<&Value> =
        trail.as_array().unwrap().iter().filter(|e| e["action"] == "agent.disable").collect();
    assert_eq!(disabled.len(), 1, "audited once: {trail}");
    assert_eq!(disabled[0]["actor_kind"], "doorman");
    assert_eq!(disabled[0]["tenant_id"], tenant.as_str());
    assert!(disabled[0]["target"].as_str().unwrap().starts_with("failing since "), "{}", disabled[0]);
    let text = ok(&doorman(db.url(), &["agent", "show", "--tenant", &tenant]));
    assert!(text.contains("disabled by Doorman"), "{text}");
    webhook
        .wait_until("the platform told of the circuit and the disabling", Duration::from_secs(15), |w| {
            told(w, "agent.circuit_opened", &tenant) == 1 && told(w, "agent.disabled", &tenant) == 1
        })
        .await;
    assert_eq!(webhook.bad_signatures(), 0);

    // The agent is back and an operator resumes it: both cleared, deliveries flow again.
    agent.answer_with(200);
    ok(&doorman(db.url(), &["agent", "resume", "--tenant", &tenant]));
    let shown = agent_shown(&db, &tenant);
    assert_eq!(
        (shown["paused"].clone(), shown["disabled_at"].clone(), shown["failing_since"].clone()),
        (Value::Bool(false), Value::Null, Value::Null)
    );
    assert_eq!(until_answered(server.base(), "THEALTH", 200, Duration::from_secs(10)).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_answers_again_before_the_time_is_up_is_failing_no_more() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let tenant =
        database::tenant_with_agent(&db.operator(), "TBACK", agent.url(), AGENT_SECRET).await.to_string();
    let flags: Vec<&str> = FLAGS.iter().map(|f| if *f == "3s" { "1h" } else { f }).collect();
    let webhook = FakeAgent::start(WEBHOOK_SECRET);
    let server = serve_told(&db, &webhook, &flags);

    agent.answer_with(500);
    assert_eq!(until_answered(server.base(), "TBACK", 503, Duration::from_secs(10)).await, 503);
    until_shown(&db, &tenant, "failing since is kept", Duration::from_secs(5), |a| {
        a["failing_since"].is_string()
    })
    .await;
    agent.answer_with(200);
    // After the cooldown the probe is taken: the circuit closes, and the time is cleared.
    assert_eq!(until_answered(server.base(), "TBACK", 200, Duration::from_secs(10)).await, 200);
    until_shown(&db, &tenant, "failing since is cleared", Duration::from_secs(5), |a| {
        a["failing_since"].is_null()
    })
    .await;
    assert_eq!(agent_shown(&db, &tenant)["paused"], false);
}

//! The HTTP agent bridge against a real (fake) agent over loopback.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use doorman_adapters::bridge::{
    BridgeSettings, CircuitSettings, DestinationPolicy, HttpAgentBridge, LimitSettings,
};
use doorman_domain::Job;
use doorman_domain::ports::{AgentBridge, Unready};
use doorman_domain::*;
use doorman_testkit::{FakeAgent, FaultProxy};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn job(url: &str, secret: &str, event_id: Option<&str>) -> Job {
    Job::for_tests(
        "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11".parse().unwrap(),
        AgentEndpoint {
            url: AgentUrl::parse(url).unwrap(),
            secret: AgentSecret::parse(secret).unwrap(),
            paused: false,
        },
        InboundEvent {
            platform: Platform::Slack,
            workspace: WorkspaceRef::new(
                Some(WorkspaceId::new("T1").unwrap()),
                Some(WorkspaceId::new("E1").unwrap()),
                false,
            )
            .unwrap(),
            kind: EventKind::Callback { event_type: Label::new("event type", "app_mention").unwrap() },
            external_id: event_id.map(|id| ExternalEventId::new(id).unwrap()),
            delivery: Delivery {
                attempt: 2,
                retry_reason: Some(RetryReason::HttpTimeout),
                replay: false,
                redelivery: 0,
            },
            payload: Payload::from_json_text(r#"{"type":"event_callback","event":{"text":"hi \"there\""}}"#),
            fingerprint: None,
            lifecycle: None,
        },
        DateTime::<Utc>::from_timestamp(1_700_000_000, 123_000_000).unwrap(),
    )
}

/// The fake agents listen on http://127.0.0.1: private destinations allowed unless a test says
/// otherwise.
fn bridge(settings: BridgeSettings) -> HttpAgentBridge {
    let settings = BridgeSettings { destinations: DestinationPolicy { allow_private: true }, ..settings };
    HttpAgentBridge::new(settings).unwrap()
}

#[tokio::test]
async fn a_dispatch_is_signed_and_carries_the_documented_fields() {
    let agent = FakeAgent::start(SECRET);
    let bridge = bridge(BridgeSettings::default());

    bridge.dispatch(&job(agent.url(), SECRET, Some("Ev42")), None).await.unwrap();

    assert_eq!(agent.bad_signatures(), 0);
    let received = agent.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].webhook_id, "evt_Ev42");
    let doc = &received[0].document;
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["tenant_id"], "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11");
    assert_eq!(doc["platform"], "slack");
    assert_eq!(doc["kind"], "event_callback");
    assert_eq!(doc["external_event_id"], "Ev42");
    assert_eq!(doc["event_type"], "app_mention");
    assert_eq!(
        doc["workspace"],
        serde_json::json!({"team_id": "T1", "enterprise_id": "E1", "enterprise_install": false})
    );
    assert_eq!(
        doc["delivery"],
        serde_json::json!({"attempt": 2, "retry_reason": "http_timeout", "replay": false, "redelivery": 0})
    );
    assert_eq!(doc["received_at"], "2023-11-14T22:13:20.123Z");
    assert_eq!(doc["payload"]["event"]["text"], "hi \"there\"");
}

#[tokio::test]
async fn an_agent_signed_with_another_secret_rejects_the_dispatch() {
    let agent = FakeAgent::start("whsec_c29tZS1vdGhlci1zZWNyZXQtYnl0ZXM=");
    let error =
        bridge(BridgeSettings::default()).dispatch(&job(agent.url(), SECRET, None), None).await.unwrap_err();
    assert_eq!(error, DispatchError::Rejected { status: 401, answer: Some("bad signature".into()) });
    assert_eq!(agent.bad_signatures(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_within_the_budget_then_reported_unreachable() {
    // Bind and drop: the port is now (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = Instant::now();
    let error = bridge(BridgeSettings::default())
        .dispatch(&job(&format!("http://127.0.0.1:{port}/dispatch"), SECRET, None), None)
        .await
        .unwrap_err();
    assert!(matches!(error, DispatchError::Unreachable { kind: FailureKind::Refused, .. }), "{error:?}");
    // Three attempts: waits of 100 ms and 200 ms between them.
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert!(!error.to_string().contains("127.0.0.1"), "the URL stays out of errors: {error}");
}

#[tokio::test]
async fn an_error_answer_is_never_sent_again() {
    let agent = FakeAgent::start(SECRET);
    agent.answer_with(503);
    let error = bridge(BridgeSettings::default())
        .dispatch(&job(agent.url(), SECRET, Some("Ev1")), None)
        .await
        .unwrap_err();
    let answer = Some(r#"{"error":"the agent answered 503"}"#.to_owned());
    assert_eq!(
        error,
        DispatchError::Rejected { status: 503, answer },
        "the status and the start of the answer"
    );
    assert_eq!(agent.requests(), 1);
}

/// The agent read the whole request and answered; the answer never came back (the connection
/// died with it). The agent may have the event, so Doorman must not POST it again, even with
/// connection retries configured: the proxy refuses connections from then on, so a second
/// attempt would end as `Unreachable`, not `Interrupted`.
#[tokio::test]
async fn a_request_the_agent_read_whose_answer_was_lost_is_not_sent_again() {
    let agent = FakeAgent::start(SECRET);
    let upstream = url::Url::parse(agent.url()).unwrap().socket_addrs(|| None).unwrap()[0];
    let proxy = FaultProxy::start(upstream).await;
    proxy.lose_answer_to(b"webhook-id: evt_Ev1");
    let url = format!("http://{}/dispatch", proxy.addr());
    let settings = BridgeSettings {
        connect_attempts: 3,
        connect_retry_budget: Duration::from_secs(2),
        ..Default::default()
    };
    let error = bridge(settings).dispatch(&job(&url, SECRET, Some("Ev1")), None).await.unwrap_err();
    assert!(matches!(error, DispatchError::Interrupted(_)), "not sent again: {error:?}");
    agent.wait_until("the agent read the request", Duration::from_secs(5), |a| a.requests() == 1).await;
    let ids: Vec<String> = agent.arrivals().into_iter().map(|a| a.webhook_id).collect();
    assert_eq!(ids, ["evt_Ev1"], "one POST");
    assert_eq!(proxy.accepted(), 1, "one connection");
}

#[tokio::test]
async fn a_slow_agent_times_out_and_is_not_sent_again() {
    let agent = FakeAgent::start(SECRET);
    agent.close_gate();
    let settings = BridgeSettings { dispatch_timeout: Duration::from_millis(300), ..Default::default() };
    let error = bridge(settings).dispatch(&job(agent.url(), SECRET, Some("Ev1")), None).await.unwrap_err();
    assert!(matches!(error, DispatchError::TimedOut(_)), "{error:?}");
    assert_eq!(agent.requests(), 1);
}

#[tokio::test]
async fn consecutive_failures_open_the_circuit_one_probe_goes_after_the_cooldown_and_its_success_closes_it() {
    let agent = FakeAgent::start(SECRET);
    agent.answer_with(500);
    // No cooldown: the circuit is half-open as soon as it opens, so the test needs no clock.
    let settings = BridgeSettings {
        circuit: CircuitSettings {
            failures: std::num::NonZeroU32::new(2).unwrap(),
            cooldown: Duration::ZERO,
        },
        ..Default::default()
    };
    let bridge = bridge(settings);
    let job = job(agent.url(), SECRET, None);
    let _ = bridge.dispatch(&job, None).await;
    assert!(bridge.admit(job.tenant()).is_ok(), "one failure: still closed");
    let _ = bridge.dispatch(&job, None).await;

    let probe = bridge.admit(job.tenant()).expect("half-open: one probe");
    assert_eq!(bridge.admit(job.tenant()).unwrap_err(), Unready::CircuitOpen, "only one");
    assert_eq!(bridge.open_circuits(), 1);
    drop(probe);
    let probe = bridge.admit(job.tenant()).expect("a probe never dispatched gave its turn back");

    let _ = bridge.dispatch(&job, None).await;
    drop(probe);
    let probe = bridge
        .admit(job.tenant())
        .expect("the failed probe reopened it; after the (zero) cooldown, a new one");
    agent.answer_with(200);
    bridge.dispatch(&job, None).await.unwrap();
    drop(probe);
    assert_eq!(bridge.open_circuits(), 0);
    let places: Vec<_> = (0..3).map(|_| bridge.admit(job.tenant()).expect("closed")).collect();
    assert_eq!(places.len(), 3);
}

#[tokio::test]
async fn a_tenant_gets_at_most_its_bound_of_places_and_they_come_back_with_the_jobs() {
    let settings = BridgeSettings {
        limits: LimitSettings {
            per_tenant: std::num::NonZeroUsize::new(2).unwrap(),
            total: std::num::NonZeroUsize::new(3).unwrap(),
        },
        ..Default::default()
    };
    let bridge = bridge(settings);
    let (a, b) = (TenantId::generate(), TenantId::generate());
    let held = [bridge.admit(a).unwrap(), bridge.admit(a).unwrap()];
    assert_eq!(bridge.admit(a).unwrap_err(), Unready::Busy(Busy::Tenant));
    let third = bridge.admit(b).unwrap();
    assert_eq!(bridge.admit(b).unwrap_err(), Unready::Busy(Busy::Process));
    assert_eq!(bridge.in_flight(), 3);
    drop(held);
    drop(third);
    assert_eq!(bridge.in_flight(), 0);
}

#[tokio::test]
async fn by_default_an_http_or_private_destination_gets_nothing_sent() {
    let agent = FakeAgent::start(SECRET);
    let strict = HttpAgentBridge::new(BridgeSettings::default()).unwrap();
    let port = agent.url().rsplit(':').next().unwrap().trim_end_matches("/dispatch").to_owned();
    for url in [
        agent.url().to_owned(),                                // http, loopback
        format!("https://127.0.0.1:{port}/dispatch"),          // loopback written in the URL
        format!("https://localhost:{port}/dispatch"),          // a name that resolves to loopback
        "https://169.254.169.254/latest/meta-data".to_owned(), // cloud metadata
    ] {
        let error = strict.dispatch(&job(&url, SECRET, Some("Ev1")), None).await.unwrap_err();
        assert!(matches!(error, DispatchError::DestinationNotAllowed(_)), "{url}: {error:?}");
        assert!(error.to_string().starts_with("destination_not_allowed"), "{error}");
    }
    assert_eq!(agent.requests() + agent.bad_signatures(), 0, "nothing was sent");
}

#[tokio::test]
async fn with_an_installation_the_dispatch_carries_its_authorization() {
    let agent = FakeAgent::start(SECRET);
    let installation = Installation {
        team_id: Some(WorkspaceId::new("T1").unwrap()),
        enterprise_id: Some(WorkspaceId::new("E1").unwrap()),
        bot_user_id: "U0KRQLJ9H".into(),
        bot_token: Some(SlackToken::new("xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy").unwrap()),
        scopes: "commands,chat:write".into(),
        expires_at: None,
        refreshable: false,
    };
    bridge(BridgeSettings::default())
        .dispatch(&job(agent.url(), SECRET, Some("Ev7")), Some(installation))
        .await
        .unwrap();
    let doc = &agent.received()[0].document;
    assert_eq!(
        doc["authorization"],
        serde_json::json!({
            "bot_token": "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
            "bot_user_id": "U0KRQLJ9H",
            "team_id": "T1",
            "enterprise_id": "E1",
            "scopes": ["commands", "chat:write"]
        })
    );
    bridge(BridgeSettings::default()).dispatch(&job(agent.url(), SECRET, Some("Ev8")), None).await.unwrap();
    assert!(agent.received()[1].document.get("authorization").is_none(), "no installation, no field");
}

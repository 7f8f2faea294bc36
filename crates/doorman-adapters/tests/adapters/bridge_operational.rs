//! The operational webhook's sender against a real receiver over loopback that checks the
//! Standard Webhooks signature: a 2xx is delivered, anything else a failure saying why, and
//! the same message keeps its `webhook-id`.

use std::time::Duration;

use chrono::Utc;
use doorman_adapters::bridge::{DestinationPolicy, OperationalWebhook, OperationalWebhookSettings};
use doorman_domain::{AgentSecret, AgentUrl, OperationalEvent, OperationalKind, TenantId};
use doorman_testkit::FakeAgent;
use uuid::Uuid;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET: &str = "whsec_c2VjcmV0LW9mLWFub3RoZXItcmVjZWl2ZXI=";

fn webhook(url: &str, policy: DestinationPolicy) -> OperationalWebhook {
    OperationalWebhook::new(&OperationalWebhookSettings {
        url: AgentUrl::from_operator(url).unwrap(),
        secret: AgentSecret::parse(SECRET).unwrap(),
        timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(1),
        destinations: policy,
        extra_roots: Vec::new(),
    })
    .unwrap()
}

fn opened() -> OperationalEvent {
    OperationalEvent {
        kind: OperationalKind::AgentCircuitOpened,
        tenant: TenantId::generate(),
        external_event_id: None,
        at: Utc::now(),
        detail: Some("5 consecutive failures".into()),
    }
}

#[tokio::test]
async fn a_signed_message_is_delivered_and_a_refusal_is_a_failure_with_the_same_id() {
    let receiver = FakeAgent::start(SECRET);
    let webhook = webhook(receiver.url(), DestinationPolicy { allow_private: true });
    let (id, event) = (Uuid::new_v4(), opened());

    receiver.answer_with(503);
    let failure = webhook.send(id, &event).await.unwrap_err();
    assert!(failure.0.starts_with("answered HTTP 503"), "{failure}");
    receiver.answer_with(200);
    assert_eq!(webhook.send(id, &event).await.unwrap(), 200);

    let arrivals = receiver.arrivals();
    assert_eq!(arrivals.len(), 2, "both attempts were signed as the receiver checks");
    let webhook_id = format!("msg_{}", id.simple());
    assert!(arrivals.iter().all(|a| a.webhook_id == webhook_id), "{arrivals:?}");
    let [received] = receiver.received().try_into().unwrap();
    assert_eq!(received.kind, "agent.circuit_opened");
    assert_eq!(received.document["data"]["tenant_id"], event.tenant.to_string());
    assert_eq!(received.document["data"]["detail"], "5 consecutive failures");
    assert_eq!(receiver.bad_signatures(), 0);
}

#[tokio::test]
async fn a_receiver_holding_another_secret_refuses_every_message() {
    let receiver = FakeAgent::start(OTHER_SECRET);
    let webhook = webhook(receiver.url(), DestinationPolicy { allow_private: true });
    let failure = webhook.send(Uuid::new_v4(), &opened()).await.unwrap_err();
    assert!(failure.0.starts_with("answered HTTP 401"), "{failure}");
    assert_eq!((receiver.bad_signatures(), receiver.count()), (1, 0));
}

#[tokio::test]
async fn the_agents_destination_rules_hold_for_the_operational_webhook() {
    let receiver = FakeAgent::start(SECRET);
    let url = receiver.url().replace("127.0.0.1", "localhost").replace("http:", "https:");
    let failure =
        webhook(&url, DestinationPolicy::default()).send(Uuid::new_v4(), &opened()).await.unwrap_err();
    assert!(failure.0.contains("not public"), "{failure}");
    assert_eq!(receiver.requests(), 0, "nothing was sent");
}

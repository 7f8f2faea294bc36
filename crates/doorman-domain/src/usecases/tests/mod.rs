//! One test per ordering rule of the inbound path. The mocks are the ports; a
//! `mockall::Sequence` pins the order wherever order is the rule.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use mockall::Sequence;
use mockall::predicate::always;

use super::{Acknowledgement, Decision, Handled, Inbound, NotSent, Unavailability};
use crate::errors::{DispatchError, OAuthError, RefreshError, StorageError, ValidationError};
use crate::model::*;
use crate::ports::{
    MockAgentBridge, MockClock, MockInstallations, MockReceiptStore, MockTenantDirectory, Unready,
};

type Fut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

fn ready<T: Send + 'static>(value: T) -> Fut<T> {
    Box::pin(async move { value })
}

fn tenant_id() -> TenantId {
    "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11".parse().unwrap()
}

fn agent(paused: bool) -> AgentEndpoint {
    AgentEndpoint {
        url: AgentUrl::parse("http://127.0.0.1:9/agent").unwrap(),
        secret: AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap(),
        paused,
    }
}

fn tenant() -> Tenant {
    Tenant { id: tenant_id(), agent: Agent::Ready(agent(false)), installation: None, retain_payloads: false }
}

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap()
}

fn retention() -> Retention {
    Retention::new(Duration::from_secs(3600), 50).unwrap()
}

fn callback(event_id: Option<&str>, attempt: u32) -> InboundEvent {
    InboundEvent {
        platform: Platform::Slack,
        workspace: WorkspaceRef::team(WorkspaceId::new("T0001").unwrap()),
        kind: EventKind::Callback { event_type: Label::new("event type", "app_mention").unwrap() },
        external_id: event_id.map(|id| ExternalEventId::new(id).unwrap()),
        delivery: Delivery {
            attempt,
            retry_reason: (attempt > 0).then_some(RetryReason::HttpTimeout),
            replay: false,
            redelivery: 0,
        },
        payload: Payload::from_json_text("{}"),
        fingerprint: None,
        lifecycle: None,
    }
}

fn numbered(attempt: u32) -> InboundEvent {
    callback(Some("Ev0PV52K25"), attempt)
}

fn command() -> InboundEvent {
    InboundEvent {
        kind: EventKind::Command { command: Label::new("command", "/weather").unwrap() },
        external_id: None,
        ..callback(None, 0)
    }
}

/// The four mocks, with expectations set per test, then turned into the use cases.
#[derive(Default)]
struct Ports {
    directory: MockTenantDirectory,
    bridge: MockAgentBridge,
    receipts: MockReceiptStore,
    installations: MockInstallations,
    clock: MockClock,
}

impl Ports {
    fn new() -> Self {
        let mut ports = Self::default();
        ports.clock.expect_now().returning(now);
        ports
    }

    /// Resolves to a healthy tenant, no order imposed.
    fn with_healthy_tenant(mut self) -> Self {
        self.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
        self.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
        self
    }

    fn never_claims(mut self) -> Self {
        self.receipts.expect_claim().never();
        self.receipts.expect_claim_request().never();
        self
    }

    fn never_dispatches(mut self) -> Self {
        self.bridge.expect_dispatch().never();
        self
    }

    fn never_writes_after_dispatch(mut self) -> Self {
        self.receipts.expect_complete().never();
        self.receipts.expect_record_failure().never();
        self
    }

    fn build(
        self,
    ) -> Inbound<MockTenantDirectory, MockAgentBridge, MockReceiptStore, MockInstallations, MockClock> {
        Inbound::new(self.directory, self.bridge, self.receipts, self.installations, self.clock, retention())
    }
}

fn accepted(decision: Decision) -> Job {
    match decision.into_parts() {
        (Acknowledgement::Accepted { .. }, Some(job)) => job,
        other => panic!("expected Accepted with its job, got {other:?}"),
    }
}

/// The answer alone (a refused or duplicate delivery has no job).
fn answer(decision: Decision) -> Acknowledgement {
    let (acknowledgement, job) = decision.into_parts();
    assert_eq!(job.is_some(), matches!(acknowledgement, Acknowledgement::Accepted { .. }));
    acknowledgement
}

// --- acknowledge -------------------------------------------------------------------------

#[tokio::test]
async fn resolve_happens_before_the_bridge_check_and_the_claim() {
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    ports
        .directory
        .expect_resolve()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(Some(tenant()))));
    ports.bridge.expect_admit().times(1).in_sequence(&mut seq).returning(|_| Ok(Permit::unbounded()));
    ports.receipts.expect_claim().times(1).in_sequence(&mut seq).returning(|_| ready(Ok(Claim::Claimed)));

    let job = accepted(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(job.tenant(), tenant_id());
}

#[tokio::test]
async fn the_claim_names_the_tenant_event_type_and_attempt() {
    let mut ports = Ports::new();
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
    ports
        .receipts
        .expect_claim()
        .withf(|r| {
            r.key.tenant == tenant_id()
                && r.key.platform == Platform::Slack
                && r.key.external_id.as_str() == "Ev0PV52K25"
                && r.event_type.as_str() == "app_mention"
                && r.attempt == 2
                && r.claimed_at == now()
        })
        .times(1)
        .returning(|_| ready(Ok(Claim::Claimed)));

    let job = accepted(ports.build().acknowledge(numbered(2)).await);
    assert_eq!(job.received_at(), now());
}

#[tokio::test]
async fn an_unknown_workspace_never_claims_nor_dispatches() {
    let mut ports = Ports::new().never_claims().never_dispatches().never_writes_after_dispatch();
    ports.directory.expect_resolve().times(1).returning(|_, _| ready(Ok(None)));
    ports.bridge.expect_admit().never();

    assert_eq!(answer(ports.build().acknowledge(numbered(0)).await), Acknowledgement::Ignored);
}

#[tokio::test]
async fn a_paused_bridge_never_claims() {
    let mut ports = Ports::new().never_claims().never_dispatches();
    ports.directory.expect_resolve().returning(|_, _| {
        ready(Ok(Some(Tenant {
            id: tenant_id(),
            agent: Agent::Ready(agent(true)),
            installation: None,
            retain_payloads: false,
        })))
    });
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::Paused { tenant: tenant_id() }));
}

#[tokio::test]
async fn an_open_circuit_never_claims() {
    let mut ports = Ports::new().never_claims().never_dispatches();
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    ports.bridge.expect_admit().with(always()).returning(|_| Err(Unready::CircuitOpen));

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::CircuitOpen { tenant: tenant_id() }));
}

#[tokio::test]
async fn a_tenant_without_an_agent_never_claims() {
    let mut ports = Ports::new().never_claims().never_dispatches();
    ports.directory.expect_resolve().returning(|_, _| {
        ready(Ok(Some(Tenant {
            id: tenant_id(),
            agent: Agent::NotSet,
            installation: None,
            retain_payloads: false,
        })))
    });
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::NoAgent { tenant: tenant_id() }));
}

#[tokio::test]
async fn a_tenant_whose_stored_agent_does_not_convert_never_claims() {
    let mut ports = Ports::new().never_claims().never_dispatches();
    let unusable = Agent::Unusable(ValidationError::new("agent URL", "is not a URL"));
    ports.directory.expect_resolve().returning(move |_, _| {
        ready(Ok(Some(Tenant {
            id: tenant_id(),
            agent: unusable.clone(),
            installation: None,
            retain_payloads: false,
        })))
    });
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::Misconfigured { tenant: tenant_id() }));
}

#[tokio::test]
async fn a_directory_failure_never_claims_nor_dispatches() {
    let mut ports = Ports::new().never_claims().never_dispatches();
    let down = StorageError::Unavailable("pool timed out".into());
    let returned = down.clone();
    ports.directory.expect_resolve().returning(move |_, _| ready(Err(returned.clone())));
    ports.bridge.expect_admit().never();

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::Storage(down)));
}

#[tokio::test]
async fn a_failed_claim_is_unavailable_and_never_dispatches() {
    let mut ports = Ports::new().with_healthy_tenant().never_dispatches();
    ports
        .receipts
        .expect_claim()
        .times(1)
        .returning(|_| ready(Err(StorageError::Unavailable("connection refused".into()))));

    let ack = answer(ports.build().acknowledge(numbered(0)).await);
    assert!(matches!(ack, Acknowledgement::Unavailable(Unavailability::Storage(_))), "{ack:?}");
}

// --- a claim whose commit was not confirmed -----------------------------------------------

fn unconfirmed() -> StorageError {
    StorageError::Unconfirmed("connection closed during the commit".into())
}

/// Acknowledges a numbered event whose claim comes back unconfirmed; returns the answer, the
/// job, and the claim that was sent.
async fn acknowledge_unconfirmed(ports: Ports) -> (Acknowledgement, Job, NewReceipt) {
    let mut ports = ports.with_healthy_tenant();
    let sent = Arc::new(Mutex::new(None));
    let seen = sent.clone();
    ports.receipts.expect_claim().times(1).returning(move |receipt| {
        *seen.lock().unwrap() = Some(receipt.clone());
        ready(Err(unconfirmed()))
    });
    let (ack, job) = ports.build().acknowledge(numbered(0)).await.into_parts();
    let sent = sent.lock().unwrap().clone().expect("a claim was sent");
    (ack, job.expect("an unconfirmed claim leaves a job to settle"), sent)
}

#[tokio::test]
async fn an_unconfirmed_claim_is_answered_503_and_leaves_its_claim_to_settle() {
    let (ack, job, sent) = acknowledge_unconfirmed(Ports::new().never_dispatches()).await;
    assert_eq!(ack, Acknowledgement::Unavailable(Unavailability::Storage(unconfirmed())));
    assert_eq!(job.unsettled_claim(), Some(&sent), "the very claim that was sent, its id included");
}

#[tokio::test]
async fn each_delivery_claims_with_an_id_of_its_own() {
    let mut ports = Ports::new().with_healthy_tenant();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = ids.clone();
    ports.receipts.expect_claim().times(2).returning(move |receipt| {
        seen.lock().unwrap().push(receipt.claim);
        ready(Ok(Claim::Duplicate))
    });
    let inbound = ports.build();
    inbound.acknowledge(numbered(0)).await;
    inbound.acknowledge(numbered(1)).await;
    let ids = ids.lock().unwrap();
    assert_ne!(ids[0], ids[1], "a retry is another delivery, with another claim");
}

/// Ports whose store settles `sent` (and nothing else) as `settled`, and never claims.
fn settling(settled: Result<Claim, StorageError>, sent: &NewReceipt) -> Ports {
    let mut ports = Ports::new();
    let expected = sent.clone();
    ports
        .receipts
        .expect_settle()
        .withf(move |claim| *claim == expected)
        .times(1)
        .returning(move |_| ready(settled.clone()));
    ports.receipts.expect_claim().never();
    ports
}

#[tokio::test]
async fn an_unconfirmed_claim_that_holds_the_event_is_dispatched_once_settled() {
    let (_, job, sent) = acknowledge_unconfirmed(Ports::new()).await;
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    ports.receipts.expect_claim().never();
    let expected = sent.clone();
    ports
        .receipts
        .expect_settle()
        .withf(move |claim| *claim == expected)
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| ready(Ok(Claim::Claimed)));
    ports.bridge.expect_admit().times(1).in_sequence(&mut seq).returning(|_| Ok(Permit::unbounded()));
    ports.bridge.expect_dispatch().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(200)));
    ports
        .receipts
        .expect_complete()
        .withf(|key, _, _, _| key.external_id.as_str() == "Ev0PV52K25")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(Completion::default())));
    assert_eq!(ports.build().handle(job).await, Handled::Delivered { pruned: 0 });
}

/// A permit whose place is `held` until it is dropped.
fn tracked_permit(held: &Arc<std::sync::atomic::AtomicBool>) -> Permit {
    struct Place(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Place {
        fn drop(&mut self) {
            self.0.store(false, std::sync::atomic::Ordering::SeqCst);
        }
    }
    held.store(true, std::sync::atomic::Ordering::SeqCst);
    Permit::new(Place(held.clone()))
}

#[tokio::test]
async fn an_unconfirmed_claim_gives_its_place_back_while_it_settles() {
    let held = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut acknowledging = Ports::new();
    let place = held.clone();
    acknowledging.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    acknowledging.bridge.expect_admit().times(1).returning(move |_| Ok(tracked_permit(&place)));
    let (_, job, _) = acknowledge_unconfirmed(acknowledging).await;
    assert!(held.load(std::sync::atomic::Ordering::SeqCst), "the accepted job holds its place");

    let mut ports = Ports::new();
    let during = held.clone();
    ports.receipts.expect_settle().times(1).returning(move |_| {
        assert!(!during.load(std::sync::atomic::Ordering::SeqCst), "a settling job holds no place");
        ready(Ok(Claim::Claimed))
    });
    // Admitted again to dispatch; refused here (its circuit opened meanwhile): nothing is sent
    // and the failure is on the receipt.
    ports.bridge.expect_admit().times(1).returning(|_| Err(Unready::CircuitOpen));
    ports.bridge.expect_dispatch().never();
    ports
        .receipts
        .expect_record_failure()
        .withf(|_, attempt| {
            attempt.reason.as_deref() == Some("not_admitted: the agent's circuit is open")
                && attempt.failure == Some(FailureKind::NotAdmitted)
                && attempt.status.is_none()
        })
        .times(1)
        .returning(|_, _| ready(Ok(())));
    let handled = ports.build().handle(job).await;
    assert!(
        matches!(handled, Handled::Failed { error: DispatchError::NotAdmitted(_), recorded: true }),
        "{handled:?}"
    );
}

#[tokio::test]
async fn an_unconfirmed_claim_held_by_another_delivery_sends_nothing() {
    let (_, job, sent) = acknowledge_unconfirmed(Ports::new()).await;
    let ports = settling(Ok(Claim::Duplicate), &sent).never_dispatches().never_writes_after_dispatch();
    assert_eq!(ports.build().handle(job).await, Handled::NotSent(NotSent::ClaimedElsewhere));
}

#[tokio::test]
async fn an_unconfirmed_claim_that_cannot_be_settled_sends_nothing() {
    let (_, job, sent) = acknowledge_unconfirmed(Ports::new()).await;
    let down = StorageError::Unavailable("no primary".into());
    let ports = settling(Err(down.clone()), &sent).never_dispatches().never_writes_after_dispatch();
    assert_eq!(ports.build().handle(job).await, Handled::NotSent(NotSent::Unsettled(down)));
}

#[tokio::test]
async fn a_duplicate_never_dispatches() {
    let mut ports = Ports::new().with_healthy_tenant().never_dispatches().never_writes_after_dispatch();
    ports.receipts.expect_claim().times(1).returning(|_| ready(Ok(Claim::Duplicate)));

    let ack = answer(ports.build().acknowledge(numbered(1)).await);
    assert_eq!(ack, Acknowledgement::Duplicate { tenant: tenant_id() });
}

#[tokio::test]
async fn the_retry_attempt_does_not_change_any_outcome() {
    for claim in [Claim::Claimed, Claim::Duplicate] {
        let mut outcomes = Vec::new();
        for attempt in [0, 3] {
            let mut ports = Ports::new();
            ports.directory.expect_resolve().times(1).returning(|_, _| ready(Ok(Some(tenant()))));
            ports.bridge.expect_admit().times(1).returning(|_| Ok(Permit::unbounded()));
            ports.receipts.expect_claim().times(1).returning(move |_| ready(Ok(claim)));
            let ack = answer(ports.build().acknowledge(numbered(attempt)).await);
            // Compare the decision, not the job's copy of the (differing) delivery header.
            outcomes.push(format!("{ack:?}"));
        }
        assert_eq!(outcomes[0], outcomes[1], "attempt 0 and attempt 3 must be treated alike");
    }
}

/// What the use cases log while `run` runs on this thread, as text.
async fn logged_while<T>(run: impl Future<Output = T>) -> (T, String) {
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt().with_ansi(false).with_writer(move || writer.clone()).finish();
    // `#[tokio::test]` runs on one thread, so the default holds for the whole future.
    let _guard = tracing::subscriber::set_default(subscriber);
    let value = run.await;
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    (value, text)
}

#[tokio::test]
async fn a_resent_event_is_logged_as_a_warning_and_a_first_delivery_is_not() {
    for (attempt, warned) in [(0, false), (2, true)] {
        let mut ports = Ports::new().with_healthy_tenant();
        ports.receipts.expect_claim().returning(|_| ready(Ok(Claim::Duplicate)));
        let inbound = ports.build();
        let (_, logs) = logged_while(inbound.acknowledge(numbered(attempt))).await;
        let warning = logs.lines().find(|line| line.contains("platform re-sent an event"));
        assert_eq!(warning.is_some(), warned, "attempt {attempt}: {logs}");
        if let Some(line) = warning {
            assert!(line.contains("WARN") && line.contains("delivery.attempt=2"), "{line}");
            assert!(line.contains("delivery.retry_reason=\"http_timeout\""), "{line}");
        }
    }
}

#[test]
fn each_unavailability_has_one_word_for_metrics_bodies_and_logs() {
    let tenant = tenant_id();
    let words = [
        Unavailability::NoAgent { tenant },
        Unavailability::Misconfigured { tenant },
        Unavailability::Paused { tenant },
        Unavailability::CircuitOpen { tenant },
        Unavailability::Busy { tenant, limit: Busy::Tenant },
        Unavailability::Storage(StorageError::Unavailable("down".into())),
        Unavailability::Storage(StorageError::Unexpected("a constraint".into())),
        Unavailability::Internal,
    ]
    .map(|u| u.as_str());
    assert_eq!(
        words,
        [
            "no_agent",
            "misconfigured",
            "paused",
            "circuit_open",
            "busy",
            "storage",
            "storage_error",
            "internal"
        ]
    );
}

// --- acknowledge then handle -------------------------------------------------------------

#[tokio::test]
async fn the_claim_returns_before_any_dispatch_can_start() {
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    let committed = Arc::new(AtomicBool::new(false));

    ports
        .directory
        .expect_resolve()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(Some(tenant()))));
    ports.bridge.expect_admit().times(1).in_sequence(&mut seq).returning(|_| Ok(Permit::unbounded()));
    let on_claim = committed.clone();
    ports.receipts.expect_claim().times(1).in_sequence(&mut seq).returning(move |_| {
        let on_claim = on_claim.clone();
        // The flag is set when the claim *completes*, not when it is called.
        Box::pin(async move {
            tokio::task::yield_now().await;
            on_claim.store(true, Ordering::SeqCst);
            Ok(Claim::Claimed)
        })
    });
    let at_dispatch = committed.clone();
    ports.bridge.expect_dispatch().times(1).in_sequence(&mut seq).returning(move |_, _| {
        assert!(at_dispatch.load(Ordering::SeqCst), "dispatch started before the claim returned");
        ready(Ok(200))
    });
    ports
        .receipts
        .expect_complete()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(Completion::default())));

    let inbound = ports.build();
    let job = accepted(inbound.acknowledge(numbered(0)).await);
    assert!(committed.load(Ordering::SeqCst), "acknowledge must return only once the claim has");
    assert_eq!(inbound.handle(job).await, Handled::Delivered { pruned: 0 });
}

#[tokio::test]
async fn an_unnumbered_event_never_claims_and_always_dispatches() {
    let mut ports = Ports::new().with_healthy_tenant().never_claims().never_writes_after_dispatch();
    ports.bridge.expect_dispatch().times(2).returning(|_, _| ready(Ok(200)));

    let inbound = ports.build();
    for _ in 0..2 {
        let job = accepted(inbound.acknowledge(command()).await);
        assert_eq!(job.receipt_key(), None);
        assert_eq!(inbound.handle(job).await, Handled::Delivered { pruned: 0 });
    }
}

// --- handle --------------------------------------------------------------------------------

fn claimed_job() -> Job {
    Job::new(tenant_id(), agent(false), numbered(0), now(), Permit::unbounded())
}

#[tokio::test]
async fn complete_happens_only_after_a_successful_dispatch() {
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    ports.bridge.expect_dispatch().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(202)));
    let cutoff = retention().expiry_cutoff(now());
    ports
        .receipts
        .expect_complete()
        .withf(move |key, delivered, expired_before, batch| {
            key.tenant == tenant_id()
                && key.external_id.as_str() == "Ev0PV52K25"
                && *delivered == Delivered { started_at: now(), ended_at: now(), status: 202, replay: false }
                && *expired_before == cutoff
                && *batch == 50
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(Completion { pruned: 3 })));
    ports.receipts.expect_record_failure().never();

    assert_eq!(ports.build().handle(claimed_job()).await, Handled::Delivered { pruned: 3 });
}

#[tokio::test]
async fn a_failed_dispatch_records_the_failure_and_never_completes() {
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    ports
        .bridge
        .expect_dispatch()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Err(DispatchError::Rejected { status: 502, answer: Some("down".into()) })));
    ports
        .receipts
        .expect_record_failure()
        .withf(|key, attempt| {
            key.external_id.as_str() == "Ev0PV52K25"
                && *attempt
                    == AttemptRecord {
                        started_at: now(),
                        ended_at: now(),
                        replay: false,
                        status: Some(502),
                        failure: Some(FailureKind::Status),
                        reason: Some("agent answered HTTP 502".into()),
                        answer: Some("down".into()),
                    }
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(())));
    ports.receipts.expect_complete().never();

    let handled = ports.build().handle(claimed_job()).await;
    assert_eq!(
        handled,
        Handled::Failed {
            error: DispatchError::Rejected { status: 502, answer: Some("down".into()) },
            recorded: true
        }
    );
}

#[tokio::test]
async fn a_failed_unnumbered_dispatch_writes_nothing() {
    let mut ports = Ports::new().never_writes_after_dispatch();
    ports.bridge.expect_dispatch().times(1).returning(|_, _| ready(Err(DispatchError::TimedOut(60))));
    let job = Job::new(tenant_id(), agent(false), command(), now(), Permit::unbounded());

    let handled = ports.build().handle(job).await;
    assert_eq!(handled, Handled::Failed { error: DispatchError::TimedOut(60), recorded: false });
}

#[tokio::test]
async fn a_completion_the_store_cannot_write_is_reported_not_retried() {
    let mut ports = Ports::new();
    ports.bridge.expect_dispatch().times(1).returning(|_, _| ready(Ok(200)));
    let down = StorageError::Unavailable("connection reset".into());
    let returned = down.clone();
    ports.receipts.expect_complete().times(1).returning(move |_, _, _, _| ready(Err(returned.clone())));
    ports.receipts.expect_record_failure().never();

    assert_eq!(ports.build().handle(claimed_job()).await, Handled::DeliveredUnrecorded(down));
}

#[tokio::test]
async fn a_failure_the_store_cannot_write_is_reported_unrecorded() {
    let mut ports = Ports::new();
    ports.bridge.expect_dispatch().times(1).returning(|_, _| {
        ready(Err(DispatchError::Unreachable { kind: FailureKind::Refused, reason: "refused".into() }))
    });
    ports
        .receipts
        .expect_record_failure()
        .times(1)
        .returning(|_, _| ready(Err(StorageError::Unavailable("down".into()))));
    ports.receipts.expect_complete().never();

    let handled = ports.build().handle(claimed_job()).await;
    assert!(matches!(handled, Handled::Failed { recorded: false, .. }), "{handled:?}");
}

// --- effects in order --------------------------------------------------------------------
//
// `Sequence` checks the order in which ports are *called*. These check the order in which
// their work *finishes*: each port's future yields to the executor a few times before it
// records that it is done, so a use case that started a step without awaiting the previous
// one (a `join!`, a spawned task, a forgotten `.await`) records the steps out of order.

/// What happened, in order, across the ports of one test.
#[derive(Clone, Default)]
struct Journal(Arc<Mutex<Vec<&'static str>>>);

impl Journal {
    fn note(&self, what: &'static str) {
        self.0.lock().unwrap().push(what);
    }

    fn entries(&self) -> Vec<&'static str> {
        self.0.lock().unwrap().clone()
    }

    /// A future that records `started` when polled first and `done` only once it has run to
    /// completion, after yielding twice.
    fn step<T: Send + 'static>(&self, started: &'static str, done: &'static str, value: T) -> Fut<T> {
        let journal = self.clone();
        Box::pin(async move {
            journal.note(started);
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            journal.note(done);
            value
        })
    }
}

#[tokio::test]
async fn acknowledge_accepts_only_once_its_claim_has_finished_and_claims_only_once_resolved() {
    let journal = Journal::default();
    let mut ports = Ports::new();
    let j = journal.clone();
    ports.directory.expect_resolve().returning(move |_, _| j.step("resolve", "resolved", Ok(Some(tenant()))));
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
    let j = journal.clone();
    ports.receipts.expect_claim().returning(move |_| j.step("claim", "claim committed", Ok(Claim::Claimed)));

    let job = accepted(ports.build().acknowledge(numbered(0)).await);
    journal.note("accepted");

    assert_eq!(job.tenant(), tenant_id());
    assert_eq!(journal.entries(), ["resolve", "resolved", "claim", "claim committed", "accepted"]);
}

#[tokio::test]
async fn handle_records_the_outcome_only_once_the_dispatch_has_finished() {
    for (outcome, written) in [
        (Ok(200), "complete"),
        (Err(DispatchError::Rejected { status: 500, answer: None }), "record_failure"),
    ] {
        let journal = Journal::default();
        let mut ports = Ports::new();
        let j = journal.clone();
        ports
            .bridge
            .expect_dispatch()
            .returning(move |_, _| j.step("dispatch", "dispatched", outcome.clone()));
        let j = journal.clone();
        ports
            .receipts
            .expect_complete()
            .returning(move |_, _, _, _| j.step("complete", "completed", Ok(Completion::default())));
        let j = journal.clone();
        ports
            .receipts
            .expect_record_failure()
            .returning(move |_, _| j.step("record_failure", "failure recorded", Ok(())));

        ports.build().handle(claimed_job()).await;

        let entries = journal.entries();
        assert_eq!(&entries[..3], ["dispatch", "dispatched", written], "{entries:?}");
        assert_eq!(entries.len(), 4, "exactly one write after the dispatch: {entries:?}");
    }
}

// --- bounded work ---------------------------------------------------------------------------

#[tokio::test]
async fn a_delivery_over_a_bound_is_unavailable_and_never_claims() {
    for limit in [Busy::Tenant, Busy::Process] {
        for event in [numbered(0), fingerprinted(command())] {
            let mut ports = Ports::new().never_claims().never_dispatches();
            ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
            ports.bridge.expect_admit().times(1).returning(move |_| Err(Unready::Busy(limit)));
            let ack = answer(ports.build().acknowledge(event).await);
            assert_eq!(
                ack,
                Acknowledgement::Unavailable(Unavailability::Busy { tenant: tenant_id(), limit })
            );
        }
    }
}

/// A permit that says when its place was given back.
fn watched_permit(given_back: &Arc<AtomicBool>) -> Permit {
    struct Guard(Arc<AtomicBool>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    Permit::new(Guard(given_back.clone()))
}

#[tokio::test]
async fn the_place_is_held_until_the_dispatch_has_ended() {
    let given_back = Arc::new(AtomicBool::new(false));
    let mut ports = Ports::new();
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    let permit = Mutex::new(Some(watched_permit(&given_back)));
    ports.bridge.expect_admit().times(1).returning(move |_| Ok(permit.lock().unwrap().take().unwrap()));
    ports.receipts.expect_claim().returning(|_| ready(Ok(Claim::Claimed)));
    let during = given_back.clone();
    ports.bridge.expect_dispatch().times(1).returning(move |_, _| {
        assert!(!during.load(Ordering::SeqCst), "the place was given back before the dispatch");
        ready(Ok(200))
    });
    ports.receipts.expect_complete().returning(|_, _, _, _| ready(Ok(Completion::default())));

    let inbound = ports.build();
    let job = accepted(inbound.acknowledge(numbered(0)).await);
    assert!(!given_back.load(Ordering::SeqCst), "held by the accepted job");
    inbound.handle(job).await;
    assert!(given_back.load(Ordering::SeqCst), "given back once handled");
}

#[tokio::test]
async fn a_duplicate_gives_its_place_back_at_once() {
    let given_back = Arc::new(AtomicBool::new(false));
    let mut ports = Ports::new().never_dispatches();
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    let permit = Mutex::new(Some(watched_permit(&given_back)));
    ports.bridge.expect_admit().returning(move |_| Ok(permit.lock().unwrap().take().unwrap()));
    ports.receipts.expect_claim().returning(|_| ready(Ok(Claim::Duplicate)));

    assert_eq!(
        answer(ports.build().acknowledge(numbered(1)).await),
        Acknowledgement::Duplicate { tenant: tenant_id() }
    );
    assert!(given_back.load(Ordering::SeqCst));
}

// --- replays of unnumbered requests ---------------------------------------------------------

fn fingerprinted(event: InboundEvent) -> InboundEvent {
    InboundEvent {
        fingerprint: Some(Fingerprint::new(format!("v0={}", "ab".repeat(32)), now()).unwrap()),
        ..event
    }
}

#[tokio::test]
async fn an_unnumbered_request_is_recorded_and_its_replay_refused() {
    let mut ports = Ports::new().with_healthy_tenant();
    ports.receipts.expect_claim().never();
    let mut seq = Sequence::new();
    ports
        .receipts
        .expect_claim_request()
        .withf(|tenant, fp| *tenant == tenant_id() && fp.signature().starts_with("v0=abab"))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(Claim::Claimed)));
    ports
        .receipts
        .expect_claim_request()
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(Claim::Duplicate)));
    ports.bridge.expect_dispatch().never();

    let inbound = ports.build();
    let job = accepted(inbound.acknowledge(fingerprinted(command())).await);
    assert_eq!(job.receipt_key(), None, "still unclaimed: recorded, not numbered");
    assert_eq!(
        answer(inbound.acknowledge(fingerprinted(command())).await),
        Acknowledgement::Replayed { tenant: tenant_id() }
    );
}

#[tokio::test]
async fn a_fingerprint_that_cannot_be_recorded_is_unavailable_and_never_dispatches() {
    let mut ports = Ports::new().with_healthy_tenant().never_dispatches();
    ports
        .receipts
        .expect_claim_request()
        .returning(|_, _| ready(Err(StorageError::Unavailable("down".into()))));
    let ack = answer(ports.build().acknowledge(fingerprinted(command())).await);
    assert!(matches!(ack, Acknowledgement::Unavailable(Unavailability::Storage(_))), "{ack:?}");
}

#[tokio::test]
async fn a_numbered_event_is_claimed_not_fingerprinted() {
    let mut ports = Ports::new().with_healthy_tenant();
    ports.receipts.expect_claim_request().never();
    ports.receipts.expect_claim().times(1).returning(|_| ready(Ok(Claim::Claimed)));
    accepted(ports.build().acknowledge(fingerprinted(numbered(0))).await);
}

// --- installations --------------------------------------------------------------------------

fn installation(expires_in_s: Option<i64>) -> Installation {
    Installation {
        team_id: Some(WorkspaceId::new("T0001").unwrap()),
        enterprise_id: None,
        bot_user_id: "UBOT".into(),
        bot_token: Some(SlackToken::new("xoxe.xoxb-old").unwrap()),
        scopes: "chat:write".into(),
        expires_at: expires_in_s.map(|s| now() + chrono::Duration::seconds(s)),
        refreshable: expires_in_s.is_some(),
    }
}

fn installed_job(expires_in_s: Option<i64>) -> Job {
    claimed_job().with_installation(Some(installation(expires_in_s)))
}

#[tokio::test]
async fn a_dispatch_carries_the_installation_and_needs_no_refresh_while_the_token_is_fresh() {
    let mut ports = Ports::new();
    ports.installations.expect_refresh().never();
    ports
        .bridge
        .expect_dispatch()
        .withf(|_, inst| {
            inst.as_ref().and_then(|i| i.bot_token.as_ref()).map(|t| t.expose()) == Some("xoxe.xoxb-old")
        })
        .times(1)
        .returning(|_, _| ready(Ok(200)));
    ports.receipts.expect_complete().returning(|_, _, _, _| ready(Ok(Completion::default())));
    assert_eq!(ports.build().handle(installed_job(Some(3600))).await, Handled::Delivered { pruned: 0 });
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_the_dispatch_carries_it() {
    let mut ports = Ports::new();
    let mut seq = Sequence::new();
    ports.installations.expect_refresh().times(1).in_sequence(&mut seq).returning(|_, old| {
        let fresh =
            Installation { bot_token: Some(SlackToken::new("xoxe.xoxb-new").unwrap()), ..old.clone() };
        ready(Ok(fresh))
    });
    ports
        .bridge
        .expect_dispatch()
        .withf(|_, inst| {
            inst.as_ref().and_then(|i| i.bot_token.as_ref()).map(|t| t.expose()) == Some("xoxe.xoxb-new")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(200)));
    ports.receipts.expect_complete().returning(|_, _, _, _| ready(Ok(Completion::default())));
    assert_eq!(ports.build().handle(installed_job(Some(120))).await, Handled::Delivered { pruned: 0 });
}

#[tokio::test]
async fn a_failed_refresh_is_recorded_saying_whose_failure_it_is_and_nothing_is_sent() {
    type Kind = fn(&DispatchError) -> bool;
    let cases: [(RefreshError, &str, Kind); 3] = [
        (
            RefreshError::Slack(OAuthError::Refused("invalid_refresh_token".into())),
            "token_refresh_failed: Slack refused: invalid_refresh_token",
            |e| matches!(e, DispatchError::TokenRefreshFailed(_)),
        ),
        (
            RefreshError::NotConfigured,
            "token_refresh_failed: the Slack app is not configured (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET)",
            |e| matches!(e, DispatchError::TokenRefreshFailed(_)),
        ),
        (
            RefreshError::Storage(StorageError::Unavailable("pool timed out".into())),
            "token_storage_failed: storage unavailable: pool timed out",
            |e| matches!(e, DispatchError::TokenStorageFailed(_)),
        ),
    ];
    for (error, says, kind) in cases {
        let mut ports = Ports::new().never_dispatches();
        ports.installations.expect_refresh().return_once(move |_, _| ready(Err(error)));
        ports
            .receipts
            .expect_record_failure()
            .withf(move |_, attempt| attempt.reason.as_deref() == Some(says))
            .times(1)
            .returning(|_, _| ready(Ok(())));
        let handled = ports.build().handle(installed_job(Some(60))).await;
        assert!(
            matches!(&handled, Handled::Failed { error, recorded: true } if kind(error)),
            "{says}: {handled:?}"
        );
    }
}

#[tokio::test]
async fn an_expired_token_that_cannot_be_refreshed_is_never_sent() {
    let mut ports = Ports::new().never_dispatches();
    ports.installations.expect_refresh().never();
    ports
        .receipts
        .expect_record_failure()
        .withf(|_, attempt| {
            attempt.reason.as_deref().is_some_and(|r| r.starts_with("token_refresh_failed"))
                && attempt.failure == Some(FailureKind::Token)
        })
        .times(1)
        .returning(|_, _| ready(Ok(())));
    let expired = Installation { refreshable: false, ..installation(Some(-1)) };
    let handled = ports.build().handle(claimed_job().with_installation(Some(expired))).await;
    assert!(
        matches!(handled, Handled::Failed { error: DispatchError::TokenRefreshFailed(_), .. }),
        "{handled:?}"
    );
}

#[tokio::test]
async fn an_uninstall_is_dispatched_first_and_applied_after_whatever_the_agent_said() {
    for agent_answer in [Ok(200), Err(DispatchError::Rejected { status: 500, answer: None })] {
        let mut ports = Ports::new();
        let mut seq = Sequence::new();
        ports
            .bridge
            .expect_dispatch()
            .times(1)
            .in_sequence(&mut seq)
            .returning(move |_, _| ready(agent_answer.clone()));
        ports
            .installations
            .expect_apply()
            .withf(|tenant, _, lifecycle| *tenant == tenant_id() && *lifecycle == Lifecycle::Uninstalled)
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _| ready(Ok(())));
        ports.receipts.expect_complete().returning(|_, _, _, _| ready(Ok(Completion::default())));
        ports.receipts.expect_record_failure().returning(|_, _| ready(Ok(())));
        let mut event = numbered(0);
        event.lifecycle = Some(Lifecycle::Uninstalled);
        ports.build().handle(Job::new(tenant_id(), agent(false), event, now(), Permit::unbounded())).await;
    }
}

mod redeliver;
mod replay;

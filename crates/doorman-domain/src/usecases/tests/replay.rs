//! Replay: refusals that send nothing, the hold taken before the dispatch and released when
//! nothing is sent, and the outcome recorded like a live dispatch's.

use super::*;
use crate::ports::MockStoredEvents;

fn key() -> ReceiptKey {
    ReceiptKey {
        tenant: tenant_id(),
        platform: Platform::Slack,
        external_id: ExternalEventId::new("Ev0PV52K25").unwrap(),
    }
}

fn candidate(handled: bool, payload_kept: bool) -> ReceiptRecord {
    ReceiptRecord {
        receipt: Receipt {
            key: key(),
            event_type: "app_mention".into(),
            attempt: 0,
            claimed_at: now() - chrono::Duration::hours(1),
            handled_at: handled.then(now),
            failure: Some(Failure { reason: "agent answered HTTP 500".into(), at: now() }),
            replays: 0,
            redeliveries: 0,
            gave_up_at: None,
            first_delivery: None,
        },
        payload_kept,
    }
}

fn stored_with(candidates: Vec<ReceiptRecord>) -> MockStoredEvents {
    let mut stored = MockStoredEvents::new();
    stored.expect_select().returning(move |_, _| ready(Ok(candidates.clone())));
    stored
}

fn kept_event() -> ReplayTake {
    let mut event = numbered(0);
    event.delivery.replay = true;
    ReplayTake::Event { event: Box::new(event), claimed_at: now() - chrono::Duration::hours(1) }
}

const HOLD: Duration = Duration::from_secs(90);

async fn replay(ports: Ports, stored: &MockStoredEvents, dry_run: bool) -> Vec<ReplayOutcome> {
    let selection = ReplaySelection::FailedSince(now() - chrono::Duration::hours(1));
    let report = ports.build().replay(stored, tenant_id(), &selection, HOLD, dry_run).await.unwrap();
    report.into_iter().map(|r| r.outcome).collect()
}

#[tokio::test]
async fn a_kept_event_is_held_then_dispatched_as_a_replay_and_its_receipt_completed() {
    let mut ports = Ports::new().with_healthy_tenant();
    let mut stored = stored_with(vec![candidate(false, true)]);
    let mut seq = Sequence::new();
    stored
        .expect_take()
        .withf(|k, until| *k == key() && *until == now() + chrono::Duration::seconds(90))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(kept_event())));
    stored.expect_release().never();
    ports
        .bridge
        .expect_dispatch()
        .withf(|job, _| {
            job.event().delivery.replay && job.received_at() == now() - chrono::Duration::hours(1)
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(200)));
    ports
        .receipts
        .expect_complete()
        .withf(|k, delivered, _, _| *k == key() && delivered.replay && delivered.status == 200)
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(Completion::default())));
    ports.receipts.expect_claim().never();
    assert_eq!(replay(ports, &stored, false).await, [ReplayOutcome::Handled]);
}

#[tokio::test]
async fn handled_events_and_events_without_a_payload_are_refused_without_taking_anything() {
    let ports = Ports::new().never_dispatches().never_claims().never_writes_after_dispatch();
    let mut stored = stored_with(vec![candidate(true, true), candidate(false, false)]);
    stored.expect_take().never();
    assert_eq!(
        replay(ports, &stored, false).await,
        [ReplayOutcome::AlreadyHandled, ReplayOutcome::NoPayload]
    );
}

#[tokio::test]
async fn a_dry_run_changes_nothing() {
    let ports = Ports::new().never_dispatches().never_claims().never_writes_after_dispatch();
    let mut stored = stored_with(vec![candidate(false, true), candidate(false, false)]);
    stored.expect_take().never();
    assert_eq!(replay(ports, &stored, true).await, [ReplayOutcome::WouldReplay, ReplayOutcome::NoPayload]);
}

#[tokio::test]
async fn an_open_circuit_sends_nothing_and_releases_the_hold() {
    let mut ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    ports.bridge.expect_admit().returning(|_| Err(Unready::CircuitOpen));
    let mut stored = stored_with(vec![candidate(false, true)]);
    let mut seq = Sequence::new();
    stored.expect_take().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(kept_event())));
    stored.expect_release().times(1).in_sequence(&mut seq).returning(|_| ready(Ok(())));
    let outcomes = replay(ports, &stored, false).await;
    assert!(
        matches!(&outcomes[..], [ReplayOutcome::NotSent(why)] if why.contains("circuit")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_workspace_now_linked_to_another_tenant_is_not_sent_there() {
    let mut ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    let other = Tenant { id: TenantId::generate(), ..tenant() };
    ports.directory.expect_resolve().returning(move |_, _| ready(Ok(Some(other.clone()))));
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
    let mut stored = stored_with(vec![candidate(false, true)]);
    stored.expect_take().returning(|_, _| ready(Ok(kept_event())));
    stored.expect_release().times(1).returning(|_| ready(Ok(())));
    let outcomes = replay(ports, &stored, false).await;
    assert!(
        matches!(&outcomes[..], [ReplayOutcome::NotSent(why)] if why.contains("another tenant")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_failed_replay_is_recorded_on_the_receipt() {
    let mut ports = Ports::new().with_healthy_tenant();
    ports
        .bridge
        .expect_dispatch()
        .times(1)
        .returning(|_, _| ready(Err(DispatchError::Rejected { status: 502, answer: None })));
    ports
        .receipts
        .expect_record_failure()
        .withf(|k, attempt| {
            *k == key() && attempt.replay && attempt.reason.as_deref().is_some_and(|r| r.contains("502"))
        })
        .times(1)
        .returning(|_, _| ready(Ok(())));
    let mut stored = stored_with(vec![candidate(false, true)]);
    stored.expect_take().returning(|_, _| ready(Ok(kept_event())));
    stored.expect_release().never();
    let outcomes = replay(ports, &stored, false).await;
    assert!(matches!(&outcomes[..], [ReplayOutcome::Failed(why)] if why.contains("502")), "{outcomes:?}");
}

#[tokio::test]
async fn a_hold_another_replay_has_is_respected() {
    let ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    let mut stored = stored_with(vec![candidate(false, true)]);
    stored.expect_take().returning(|_, _| ready(Ok(ReplayTake::InProgress)));
    stored.expect_release().never();
    assert_eq!(replay(ports, &stored, false).await, [ReplayOutcome::InProgress]);
}

#[tokio::test]
async fn a_retaining_tenant_keeps_the_payload_with_the_claim_and_others_do_not() {
    for retain in [true, false] {
        let mut ports = Ports::new();
        ports
            .directory
            .expect_resolve()
            .returning(move |_, _| ready(Ok(Some(Tenant { retain_payloads: retain, ..tenant() }))));
        ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
        ports
            .receipts
            .expect_claim()
            .withf(move |receipt| receipt.retained.is_some() == retain)
            .times(1)
            .returning(|_| ready(Ok(Claim::Claimed)));
        accepted(ports.build().acknowledge(numbered(0)).await);
    }
}

#[tokio::test]
async fn an_event_named_by_id_without_a_receipt_is_reported_unknown_and_nothing_is_sent() {
    let ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    let mut stored = stored_with(vec![]);
    stored.expect_take().never();
    let selection = ReplaySelection::Event(ExternalEventId::new("EvGone").unwrap());
    let report = ports.build().replay(&stored, tenant_id(), &selection, HOLD, false).await.unwrap();
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].key.external_id.as_str(), "EvGone");
    assert_eq!(report[0].outcome, ReplayOutcome::Unknown);

    // A selection by state that finds nothing reports nothing.
    let none = replay(Ports::new(), &stored_with(vec![]), false).await;
    assert!(none.is_empty());
}

#[tokio::test]
async fn chosen_events_are_selected_by_their_ids_and_each_one_without_a_receipt_is_reported_unknown() {
    let ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    let chosen = ["Ev0PV52K25", "EvGone"].map(|id| ExternalEventId::new(id).unwrap());
    let selection = ReplaySelection::chosen(chosen.to_vec()).unwrap();
    let mut stored = MockStoredEvents::new();
    let asked = selection.clone();
    stored
        .expect_select()
        .withf(move |tenant, selection| *tenant == tenant_id() && *selection == asked)
        .times(1)
        .returning(|_, _| ready(Ok(vec![candidate(true, true)])));
    stored.expect_take().never();
    let report = ports.build().replay(&stored, tenant_id(), &selection, HOLD, true).await.unwrap();
    let outcomes: Vec<(&str, ReplayOutcome)> =
        report.iter().map(|r| (r.key.external_id.as_str(), r.outcome.clone())).collect();
    assert_eq!(
        outcomes,
        [("Ev0PV52K25", ReplayOutcome::AlreadyHandled), ("EvGone", ReplayOutcome::Unknown)],
        "the found one as it is, the missing one named"
    );
}

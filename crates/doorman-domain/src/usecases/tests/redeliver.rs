//! Redelivery: taken only as the bridge admits (an open circuit takes none, a full bound
//! fewer), sent as Doorman's own dispatch with its number, its outcome written as a live
//! dispatch's, put back when its agent cannot take it, and a spent schedule given up.

use super::*;
use crate::ports::MockRedeliveries;

const HOLD: Duration = Duration::from_secs(90);

fn scheduled(retains_payloads: bool) -> ScheduledTenant {
    ScheduledTenant {
        tenant: tenant_id(),
        schedule: RedeliverySchedule::parse("5s,5m").unwrap(),
        retains_payloads,
    }
}

fn key(id: &str) -> ReceiptKey {
    ReceiptKey {
        tenant: tenant_id(),
        platform: Platform::Slack,
        external_id: ExternalEventId::new(id).unwrap(),
    }
}

fn due(id: &str, n: u32) -> Redelivery {
    let mut event = numbered(0);
    event.external_id = Some(ExternalEventId::new(id).unwrap());
    event.delivery.redelivery = n;
    Redelivery { event, claimed_at: now() - chrono::Duration::minutes(10) }
}

fn store_taking(events: Vec<Redelivery>, expected_limit: u32) -> MockRedeliveries {
    let mut store = MockRedeliveries::new();
    store
        .expect_take_due()
        .withf(move |tenant, schedule, limit, unfinished_after, until| {
            *tenant == tenant_id()
                && schedule.to_string() == "5s,5m"
                && *limit == expected_limit
                && *unfinished_after == HOLD
                && *until == now() + chrono::Duration::seconds(90)
        })
        .times(1)
        .returning(move |_, _, _, _, _| ready(Ok(events.clone())));
    store
}

#[tokio::test]
async fn an_open_circuit_takes_nothing() {
    let mut ports = Ports::new();
    ports.bridge.expect_admit().times(1).returning(|_| Err(Unready::CircuitOpen));
    let mut store = MockRedeliveries::new();
    store.expect_take_due().never();
    let jobs = ports.build().take_redeliveries(&store, &scheduled(false), 8, HOLD).await.unwrap();
    assert!(jobs.is_empty());
}

#[tokio::test]
async fn a_full_bound_takes_only_as_many_as_it_admits() {
    let mut ports = Ports::new();
    let admitted = Arc::new(Mutex::new(0));
    let counter = admitted.clone();
    ports.bridge.expect_admit().returning(move |_| {
        let mut n = counter.lock().unwrap();
        *n += 1;
        if *n <= 2 { Ok(Permit::unbounded()) } else { Err(Unready::Busy(Busy::Tenant)) }
    });
    ports.directory.expect_resolve().returning(|_, _| ready(Ok(Some(tenant()))));
    let store = store_taking(vec![due("Ev1", 1), due("Ev2", 1)], 2);
    let jobs = ports.build().take_redeliveries(&store, &scheduled(false), 8, HOLD).await.unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(*admitted.lock().unwrap(), 3, "it stops asking at the first refusal");
}

#[tokio::test]
async fn a_redelivery_is_doormans_own_dispatch_with_its_number_and_its_outcome_written_as_a_live_ones() {
    let mut ports = Ports::new().with_healthy_tenant();
    let store = store_taking(vec![due("Ev1", 2)], 1);
    ports
        .bridge
        .expect_dispatch()
        .withf(|job, _| {
            let delivery = job.event().delivery;
            delivery.redelivery == 2
                && !delivery.replay
                && job.received_at() == now() - chrono::Duration::minutes(10)
        })
        .times(1)
        .returning(|_, _| ready(Ok(200)));
    ports
        .receipts
        .expect_complete()
        .withf(|k, delivered, _, _| *k == key("Ev1") && !delivered.replay && delivered.status == 200)
        .times(1)
        .returning(|_, _, _, _| ready(Ok(Completion::default())));
    let inbound = ports.build();
    let jobs = inbound.take_redeliveries(&store, &scheduled(false), 1, HOLD).await.unwrap();
    assert_eq!(jobs.len(), 1);
    for job in jobs {
        assert_eq!(inbound.handle(job).await, Handled::Delivered { pruned: 0 });
    }
}

#[tokio::test]
async fn a_failed_redelivery_is_recorded_as_doormans_own_failed_attempt() {
    let mut ports = Ports::new().with_healthy_tenant();
    let store = store_taking(vec![due("Ev1", 1)], 1);
    ports
        .bridge
        .expect_dispatch()
        .returning(|_, _| ready(Err(DispatchError::Rejected { status: 503, answer: Some("down".into()) })));
    ports
        .receipts
        .expect_record_failure()
        .withf(|k, attempt| *k == key("Ev1") && !attempt.replay && attempt.status == Some(503))
        .times(1)
        .returning(|_, _| ready(Ok(())));
    ports.receipts.expect_complete().never();
    let inbound = ports.build();
    let jobs = inbound.take_redeliveries(&store, &scheduled(false), 1, HOLD).await.unwrap();
    for job in jobs {
        assert!(matches!(inbound.handle(job).await, Handled::Failed { recorded: true, .. }));
    }
}

#[tokio::test]
async fn an_event_whose_agent_was_paused_meanwhile_is_put_back_and_not_sent() {
    let mut ports = Ports::new().never_dispatches().never_writes_after_dispatch();
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
    ports
        .directory
        .expect_resolve()
        .returning(|_, _| ready(Ok(Some(Tenant { agent: Agent::Ready(agent(true)), ..tenant() }))));
    let mut store = store_taking(vec![due("Ev1", 1)], 1);
    store.expect_put_back().withf(|k| *k == key("Ev1")).times(1).returning(|_| ready(Ok(())));
    let jobs = ports.build().take_redeliveries(&store, &scheduled(false), 1, HOLD).await.unwrap();
    assert!(jobs.is_empty());
}

#[tokio::test]
async fn a_workspace_now_of_another_tenant_is_a_failed_attempt_not_put_back() {
    let mut ports = Ports::new().never_dispatches();
    ports.bridge.expect_admit().returning(|_| Ok(Permit::unbounded()));
    let other: TenantId = "0b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11".parse().unwrap();
    ports.directory.expect_resolve().returning(move |_, _| ready(Ok(Some(Tenant { id: other, ..tenant() }))));
    let mut store = store_taking(vec![due("Ev1", 1)], 1);
    store.expect_put_back().never();
    // Not put back forever: a failed attempt, so its schedule runs out and it is given up.
    ports
        .receipts
        .expect_record_failure()
        .withf(|k, attempt| {
            *k == key("Ev1")
                && attempt.failure == Some(FailureKind::NotAdmitted)
                && attempt
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.ends_with("the workspace now belongs to another tenant"))
        })
        .times(1)
        .returning(|_, _| ready(Ok(())));
    assert!(ports.build().take_redeliveries(&store, &scheduled(false), 1, HOLD).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_spent_schedule_is_given_up_keeping_the_payload_only_for_a_tenant_that_keeps_payloads() {
    for retains in [false, true] {
        let mut store = MockRedeliveries::new();
        store
            .expect_give_up()
            .withf(move |tenant, schedule, limit, keep| {
                *tenant == tenant_id() && schedule.len() == 2 && *limit == 100 && *keep == retains
            })
            .times(1)
            .returning(|_, _, _, _| ready(Ok(vec![key("Ev1")])));
        let given_up = Ports::new().build().give_up_spent(&store, &scheduled(retains), 100).await.unwrap();
        assert_eq!(given_up, [key("Ev1")]);
    }
}

//! The operational webhook end to end (issue 41), with the `doorman` binary and a real HTTP
//! receiver that checks Standard Webhooks signatures: each recorded event reaches it once,
//! signed; a receiver that refuses gets the event again, with the same `webhook-id`, once it
//! takes it; and a receiver holding another secret refuses every attempt (counted as bad
//! signatures) until the schedule is spent and the event given up.
//!
//! The events are recorded through the outbox as the producers record them (the serving role's
//! pool); the schedule is shortened with `DOORMAN_OPERATIONAL_WEBHOOK_SCHEDULE`'s flag.

use std::collections::HashSet;
use std::time::Duration;

use chrono::Utc;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::PgOperationalOutbox;
use doorman_domain::ports::OperationalOutbox;
use doorman_domain::{ExternalEventId, OperationalEvent, OperationalKind, TenantId};
use doorman_testkit::database::TestDatabase;
use doorman_testkit::{FakeAgent, ServeProcess};

use crate::helpers::{AGENT_SECRET, http_client, metric_value, spawn_serve};

const OTHER_SECRET: &str = "whsec_c2VjcmV0LW9mLWFub3RoZXItcmVjZWl2ZXI=";

/// How long the webhook may take to get what is due (the sender looks once a second).
const WAIT: Duration = Duration::from_secs(20);

fn serve(db: &TestDatabase, receiver: &FakeAgent, schedule: &str) -> ServeProcess {
    spawn_serve(
        db,
        "warn",
        &[
            "--workers",
            "1",
            "--operational-webhook-url",
            receiver.url(),
            "--operational-webhook-secret",
            AGENT_SECRET,
            "--operational-webhook-schedule",
            schedule,
        ],
    )
}

fn event(kind: OperationalKind, tenant: TenantId) -> OperationalEvent {
    OperationalEvent {
        kind,
        tenant,
        external_event_id: (kind == OperationalKind::EventExhausted)
            .then(|| ExternalEventId::new("Ev0PV52K25").unwrap()),
        at: Utc::now(),
        detail: Some(format!("{} for the test", kind.as_str())),
    }
}

async fn count(db: &TestDatabase, condition: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    diesel::sql_query(format!("SELECT count(*) AS n FROM operational_events WHERE {condition}"))
        .get_result::<Count>(&mut db.owner().await)
        .await
        .unwrap()
        .n
}

/// `doorman_operational_webhooks_total{outcome="…"}` of the server's metrics.
async fn attempts(server: &ServeProcess, outcome: &str) -> u64 {
    let name = format!("doorman_operational_webhooks_total{{outcome=\"{outcome}\"}}");
    metric_value(&http_client(), server.metrics_base(), &name).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_recorded_event_reaches_the_webhook_once_signed() {
    let db = TestDatabase::create().await;
    let receiver = FakeAgent::start(AGENT_SECRET);
    let server = serve(&db, &receiver, "standard");
    let tenant = TenantId::generate();
    let events: Vec<OperationalEvent> =
        OperationalKind::ALL.iter().map(|kind| event(*kind, tenant)).collect();
    PgOperationalOutbox::new(db.pool()).record(&events).await.unwrap();

    receiver.wait_until("the four events", WAIT, |r| r.count() == 4).await;
    // Time for a second send, had there been one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!((receiver.requests(), receiver.count(), receiver.bad_signatures()), (4, 4, 0));

    let received = receiver.received();
    let ids: HashSet<&str> = received.iter().map(|r| r.webhook_id.as_str()).collect();
    assert_eq!(ids.len(), 4, "one webhook-id each");
    assert!(ids.iter().all(|id| id.starts_with("msg_")), "{ids:?}");
    let types: HashSet<&str> = received.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(types, OperationalKind::ALL.iter().map(|k| k.as_str()).collect());
    for r in &received {
        assert_eq!(r.document["data"]["tenant_id"], tenant.to_string(), "{r:?}");
        assert_eq!(r.document["data"]["detail"], format!("{} for the test", r.kind));
        assert!(r.document["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{r:?}");
        let exhausted = r.kind == "event.exhausted";
        assert_eq!(r.document["data"]["external_event_id"].as_str(), exhausted.then_some("Ev0PV52K25"));
    }
    assert_eq!(count(&db, "delivered_at IS NOT NULL AND attempts = 0").await, 4);
    assert_eq!(attempts(&server, "delivered").await, 4);
    server.stop(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_webhook_gets_the_event_again_with_the_same_id_once_it_recovers() {
    let db = TestDatabase::create().await;
    let receiver = FakeAgent::start(AGENT_SECRET);
    receiver.answer_with(503);
    let server = serve(&db, &receiver, "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s");
    PgOperationalOutbox::new(db.pool())
        .record(&[event(OperationalKind::AgentCircuitOpened, TenantId::generate())])
        .await
        .unwrap();

    receiver.wait_until("two refused attempts", WAIT, |r| r.requests() >= 2).await;
    assert_eq!(receiver.count(), 0);
    receiver.answer_with(200);
    receiver.wait_until("the event taken", WAIT, |r| r.count() == 1).await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    let arrivals = receiver.arrivals();
    let ids: HashSet<&str> = arrivals.iter().map(|a| a.webhook_id.as_str()).collect();
    assert_eq!(ids.len(), 1, "every attempt is the same message: {arrivals:?}");
    let [taken] = receiver.received().try_into().unwrap();
    assert_eq!(Some(taken.webhook_id.as_str()), ids.into_iter().next());
    assert_eq!(receiver.count(), 1, "not sent again once taken");
    let refused = u64::try_from(arrivals.len() - 1).unwrap();
    assert_eq!(attempts(&server, "failed").await, refused);
    assert_eq!(attempts(&server, "delivered").await, 1);
    assert_eq!(count(&db, &format!("delivered_at IS NOT NULL AND attempts = {refused}")).await, 1);
    server.stop(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_with_another_secret_counts_bad_signatures_until_the_event_is_given_up() {
    let db = TestDatabase::create().await;
    let receiver = FakeAgent::start(OTHER_SECRET);
    let server = serve(&db, &receiver, "1s,1s");
    PgOperationalOutbox::new(db.pool())
        .record(&[event(OperationalKind::AgentDisabled, TenantId::generate())])
        .await
        .unwrap();

    receiver.wait_until("three refused attempts", WAIT, |r| r.bad_signatures() == 3).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while count(&db, "gave_up_at IS NOT NULL").await == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never given up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        (receiver.bad_signatures(), receiver.count()),
        (3, 0),
        "the schedule spent, no fourth attempt"
    );
    assert_eq!(count(&db, "attempts = 3 AND last_failure LIKE 'answered HTTP 401%'").await, 1);
    assert_eq!((attempts(&server, "failed").await, attempts(&server, "given_up").await), (2, 1));
    let logs = server.logs();
    assert!(logs.contains("given up") && logs.contains("agent.disabled"), "{logs}");
    assert!(!logs.contains(AGENT_SECRET.trim_start_matches("whsec_")), "the secret is never logged");
    server.stop(Duration::from_secs(10)).await;
}

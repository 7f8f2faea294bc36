//! The operational webhook's outbox on real PostgreSQL, as the server's role: a batch recorded
//! in one go, two takers never given one row, the retry schedule and giving up, and pruning
//! what was delivered or given up.

use std::collections::HashSet;
use std::time::Duration as StdDuration;

use chrono::{Duration, SubsecRound, Utc};
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::{AfterFailure, OperationalMessage, PgOperationalOutbox};
use doorman_domain::ports::OperationalOutbox;
use doorman_domain::{ExternalEventId, OperationalEvent, OperationalKind, RedeliverySchedule, TenantId};
use doorman_testkit::database::TestDatabase;
use uuid::Uuid;

const HOLD: StdDuration = StdDuration::from_secs(60);

fn event(kind: OperationalKind, tenant: TenantId, n: usize) -> OperationalEvent {
    OperationalEvent {
        kind,
        tenant,
        external_event_id: (kind == OperationalKind::EventExhausted)
            .then(|| ExternalEventId::new(format!("Ev{n:04}")).unwrap()),
        // Whole microseconds, as PostgreSQL keeps them.
        at: (Utc::now() - Duration::seconds(1000 - i64::try_from(n).unwrap())).trunc_subsecs(6),
        detail: Some(format!("reason {n}")),
    }
}

/// `n` events of one kind for one tenant, recorded in one batch.
async fn record_many(outbox: &PgOperationalOutbox, kind: OperationalKind, n: usize) {
    let tenant = TenantId::generate();
    let recorded: Vec<OperationalEvent> = (0..n).map(|i| event(kind, tenant, i)).collect();
    outbox.record(&recorded).await.unwrap();
}

async fn owner_runs(db: &TestDatabase, sql: &str) {
    diesel::sql_query(sql).execute(&mut db.owner().await).await.unwrap();
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(db: &TestDatabase, condition: &str) -> i64 {
    diesel::sql_query(format!("SELECT count(*) AS n FROM operational_events WHERE {condition}"))
        .get_result::<Count>(&mut db.owner().await)
        .await
        .unwrap()
        .n
}

/// Makes every message due now, as if its delay had passed.
async fn make_due(db: &TestDatabase) {
    owner_runs(db, "UPDATE operational_events SET next_attempt_at = now() - interval '1 second'").await;
}

#[tokio::test]
async fn a_batch_is_recorded_and_taken_whole_then_held_from_other_takers() {
    let db = TestDatabase::create().await;
    let outbox = PgOperationalOutbox::new(db.pool());
    let tenant = TenantId::generate();
    let recorded: Vec<OperationalEvent> =
        OperationalKind::ALL.iter().enumerate().map(|(n, kind)| event(*kind, tenant, n)).collect();
    outbox.record(&[]).await.unwrap();
    outbox.record(&recorded).await.unwrap();
    assert_eq!(count(&db, "true").await, 4);

    let taken = outbox.take_due(10, HOLD).await.unwrap();
    let events: Vec<OperationalEvent> = taken.iter().map(|m| m.event.clone()).collect();
    assert_eq!(events, recorded, "what was recorded, the oldest first");
    assert!(taken.iter().all(|m| m.attempts == 0));
    assert_eq!(taken.iter().map(|m| m.id).collect::<HashSet<_>>().len(), 4, "one id each");

    assert!(outbox.take_due(10, HOLD).await.unwrap().is_empty(), "held: no one else gets them");
    // A hold that ended (its taker was killed) is none: the same messages, the same ids.
    owner_runs(&db, "UPDATE operational_events SET leased_until = now() - interval '1 second'").await;
    let again = outbox.take_due(10, HOLD).await.unwrap();
    assert_eq!(again, taken);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_takers_never_get_the_same_message() {
    let db = TestDatabase::create().await;
    let outbox = PgOperationalOutbox::new(db.pool());
    record_many(&outbox, OperationalKind::AgentCircuitOpened, 200).await;

    let taker = |outbox: PgOperationalOutbox| {
        tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let taken = outbox.take_due(7, HOLD).await.unwrap();
                if taken.is_empty() {
                    return ids;
                }
                ids.extend(taken.into_iter().map(|m: OperationalMessage| m.id));
            }
        })
    };
    let (a, b) = (taker(outbox.clone()), taker(PgOperationalOutbox::new(db.pool())));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let (set_a, set_b): (HashSet<Uuid>, HashSet<Uuid>) =
        (a.iter().copied().collect(), b.iter().copied().collect());
    assert_eq!(set_a.len(), a.len());
    assert!(set_a.is_disjoint(&set_b), "a message taken twice");
    assert_eq!(set_a.len() + set_b.len(), 200, "every message taken");
}

#[tokio::test]
async fn a_failed_message_waits_for_each_delay_of_the_schedule_then_is_given_up() {
    let db = TestDatabase::create().await;
    let outbox = PgOperationalOutbox::new(db.pool());
    outbox.record(&[event(OperationalKind::AgentDisabled, TenantId::generate(), 1)]).await.unwrap();
    let schedule = RedeliverySchedule::standard();

    for (n, delay) in schedule.seconds().into_iter().enumerate() {
        let [message] = outbox.take_due(10, HOLD).await.unwrap().try_into().unwrap();
        assert_eq!(message.attempts, u32::try_from(n).unwrap());
        let before = Utc::now();
        let after = outbox.failed(message.id, &schedule, "answered HTTP 503").await.unwrap();
        let AfterFailure::RetryAt(at) = after else { panic!("attempt {n}: {after:?}") };
        let waited = (at - before).num_seconds();
        assert!((delay - 1..=delay + 1).contains(&waited), "attempt {n}: due in {waited} s, not {delay} s");
        assert!(outbox.take_due(10, HOLD).await.unwrap().is_empty(), "not due before its delay");
        make_due(&db).await;
    }
    assert_eq!(count(&db, "attempts = 7 AND last_failure = 'answered HTTP 503'").await, 1);

    // The schedule's seven delays spent: the eighth failure gives it up, for good.
    let [message] = outbox.take_due(10, HOLD).await.unwrap().try_into().unwrap();
    assert_eq!(message.attempts, 7);
    assert_eq!(
        outbox.failed(message.id, &schedule, "no answer within 10s").await.unwrap(),
        AfterFailure::GaveUp
    );
    make_due(&db).await;
    assert!(outbox.take_due(10, HOLD).await.unwrap().is_empty(), "given up: never taken again");
    assert_eq!(count(&db, "gave_up_at IS NOT NULL AND attempts = 8").await, 1);
    assert_eq!(
        outbox.failed(message.id, &schedule, "late").await.unwrap(),
        AfterFailure::AlreadyEnded,
        "a taker whose hold had ended changes nothing"
    );
}

#[tokio::test]
async fn a_delivered_message_is_not_sent_again() {
    let db = TestDatabase::create().await;
    let outbox = PgOperationalOutbox::new(db.pool());
    let tenant = TenantId::generate();
    outbox
        .record(&[
            event(OperationalKind::EventExhausted, tenant, 1),
            event(OperationalKind::AgentDisabled, tenant, 2),
        ])
        .await
        .unwrap();
    let schedule = RedeliverySchedule::parse("1s").unwrap();
    let [first, second] = outbox.take_due(10, HOLD).await.unwrap().try_into().unwrap();
    outbox.delivered(first.id).await.unwrap();
    assert!(matches!(
        outbox.failed(second.id, &schedule, "refused").await.unwrap(),
        AfterFailure::RetryAt(_)
    ));
    make_due(&db).await;
    owner_runs(&db, "UPDATE operational_events SET leased_until = NULL").await;
    let [retried] = outbox.take_due(10, HOLD).await.unwrap().try_into().unwrap();
    assert_eq!((retried.id, retried.attempts), (second.id, 1), "only the failed one, the same message");
    assert_eq!(outbox.failed(first.id, &schedule, "late").await.unwrap(), AfterFailure::AlreadyEnded);
    assert_eq!(count(&db, "delivered_at IS NOT NULL AND leased_until IS NULL").await, 1);
}

#[tokio::test]
async fn pruning_deletes_only_what_was_delivered_or_given_up_before_the_retention() {
    let db = TestDatabase::create().await;
    let outbox = PgOperationalOutbox::new(db.pool());
    record_many(&outbox, OperationalKind::AgentCircuitClosed, 5).await;
    #[derive(diesel::QueryableByName)]
    struct Detail {
        #[diesel(sql_type = Text)]
        detail: String,
    }
    // reason 0: delivered 8 days ago; 1: given up 8 days ago; 2: delivered an hour ago;
    // 3: given up an hour ago; 4: still to be sent.
    for (ended, ago, n) in [
        ("delivered_at", "8 days", 0),
        ("gave_up_at", "8 days", 1),
        ("delivered_at", "1 hour", 2),
        ("gave_up_at", "1 hour", 3),
    ] {
        owner_runs(
            &db,
            &format!(
                "UPDATE operational_events SET {ended} = now() - interval '{ago}' WHERE detail = 'reason {n}'"
            ),
        )
        .await;
    }
    let week = StdDuration::from_secs(7 * 24 * 3600);
    assert_eq!(outbox.prune(week, 1).await.unwrap(), 1, "bounded by the batch");
    assert_eq!(outbox.prune(week, 100).await.unwrap(), 1);
    assert_eq!(outbox.prune(week, 100).await.unwrap(), 0);
    let left: Vec<Detail> = diesel::sql_query("SELECT detail FROM operational_events ORDER BY detail")
        .load(&mut db.owner().await)
        .await
        .unwrap();
    assert_eq!(left.into_iter().map(|d| d.detail).collect::<Vec<_>>(), ["reason 2", "reason 3", "reason 4"]);
}

#[tokio::test]
async fn a_type_outside_the_four_is_refused_by_the_table() {
    let db = TestDatabase::create().await;
    let refused = diesel::sql_query(
        "INSERT INTO operational_events (id, type, tenant_id, occurred_at) \
         VALUES (gen_random_uuid(), 'agent.paused', gen_random_uuid(), now())",
    )
    .execute(&mut db.owner().await)
    .await;
    assert!(refused.is_err());
}

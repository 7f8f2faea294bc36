//! Redelivery's store on real PostgreSQL, as the server's role: which tenants it runs for,
//! which events are due (and which are not), the take that holds and counts and never gives
//! one event to two takers, putting back, and giving up once.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{Duration, Utc};
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::{PgRedeliveries, PgStoredEvents};
use doorman_domain::ports::{ReceiptStore, Redeliveries, StoredEvents};
use doorman_domain::{NewReceipt, Payload, RedeliverySchedule, ReplayTake, TenantId};
use doorman_testkit::database::{TestDatabase, receipt_store, test_keys};

use crate::fixtures::{delivered, failed, key, now, receipt, tenant_with_team};

/// How long an event no attempt finished waits before it is due.
const UNFINISHED: StdDuration = StdDuration::from_secs(60);

fn body(event_id: &str) -> String {
    serde_json::json!({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
        "event_time": 1_700_000_000, "event": {"type": "app_mention", "text": "again", "user": "U1"},
        "authorizations": [{"team_id": "T1", "enterprise_id": null, "is_enterprise_install": false}]
    })
    .to_string()
}

fn kept(tenant: TenantId, event_id: &str, claimed_ago: Duration) -> NewReceipt {
    NewReceipt {
        retained: Some(Payload::from_json_text(body(event_id))),
        ..receipt(tenant, event_id, Utc::now() - claimed_ago)
    }
}

fn store(db: &TestDatabase) -> PgRedeliveries {
    PgRedeliveries::new(PgStoredEvents::new(db.pool(), Arc::new(test_keys())))
}

fn schedule() -> RedeliverySchedule {
    RedeliverySchedule::parse("5s,1h").unwrap()
}

async fn owner_runs(db: &TestDatabase, sql: &str) {
    diesel::sql_query(sql).execute(&mut db.owner().await).await.unwrap();
}

async fn taken_ids(store: &PgRedeliveries, tenant: TenantId, limit: u32) -> Vec<(String, u32)> {
    let hold = Utc::now() + Duration::minutes(2);
    let mut taken: Vec<(String, u32)> = store
        .take_due(tenant, &schedule(), limit, UNFINISHED, hold)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            assert!(!r.event.delivery.replay, "a redelivery is Doorman's own dispatch");
            (r.event.external_id.unwrap().as_str().to_owned(), r.event.delivery.redelivery)
        })
        .collect();
    taken.sort();
    taken
}

#[tokio::test]
async fn only_tenants_with_a_schedule_and_an_agent_not_paused_are_listed() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b, c) = (
        tenant_with_team(&op, "T1").await,
        tenant_with_team(&op, "T2").await,
        tenant_with_team(&op, "T3").await,
    );
    owner_runs(
        &db,
        &format!("UPDATE tenants SET redelivery_schedule = '{{5,300}}' WHERE id IN ('{a}', '{b}')"),
    )
    .await;
    owner_runs(&db, &format!("UPDATE tenants SET retain_payloads = true WHERE id = '{a}'")).await;
    owner_runs(&db, &format!("UPDATE agent_bridges SET paused = true WHERE tenant_id = '{b}'")).await;
    let listed = store(&db).scheduled().await.unwrap();
    assert_eq!(listed.len(), 1, "b is paused, c has no schedule: {listed:?}");
    assert_eq!(listed[0].tenant, a);
    assert_eq!(listed[0].schedule.seconds(), [5, 300]);
    assert!(listed[0].retains_payloads);
    let _ = c;
}

#[tokio::test]
async fn due_events_are_failed_ones_past_their_delay_and_unfinished_ones_past_the_wait() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "T1").await, tenant_with_team(&op, "T2").await);
    let receipts = receipt_store(db.pool());
    let fail_at = |at| failed("agent answered HTTP 503", at);
    // Failed 10 s ago: past the first delay (5 s).
    receipts.claim(&kept(a, "EvDue", Duration::seconds(20))).await.unwrap();
    receipts.record_failure(&key(a, "EvDue"), &fail_at(Utc::now() - Duration::seconds(10))).await.unwrap();
    // Failed just now: not yet.
    receipts.claim(&kept(a, "EvSoon", Duration::seconds(20))).await.unwrap();
    receipts.record_failure(&key(a, "EvSoon"), &fail_at(Utc::now())).await.unwrap();
    // Never finished, claimed long ago (past the wait plus the delay): stranded, due.
    receipts.claim(&kept(a, "EvStranded", Duration::minutes(5))).await.unwrap();
    // Never finished, claimed 30 s ago: past the first delay (5 s), but not the wait for an
    // unfinished one (60 s): its live dispatch may still be running.
    receipts.claim(&kept(a, "EvInFlight", Duration::seconds(30))).await.unwrap();
    // Handled: never.
    receipts.claim(&kept(a, "EvHandled", Duration::minutes(5))).await.unwrap();
    receipts.complete(&key(a, "EvHandled"), &delivered(now()), now() - Duration::days(7), 10).await.unwrap();
    // No payload kept (claimed before redelivery was on): cannot be sent.
    receipts.claim(&receipt(a, "EvBare", Utc::now() - Duration::minutes(5))).await.unwrap();
    // Another tenant's due events, one with the same event id as a's: never tenant a's.
    receipts.claim(&kept(b, "EvOther", Duration::minutes(5))).await.unwrap();
    receipts.claim(&kept(b, "EvDue", Duration::minutes(5))).await.unwrap();
    let store = store(&db);

    assert_eq!(taken_ids(&store, a, 10).await, [("EvDue".to_owned(), 1), ("EvStranded".to_owned(), 1)]);
    assert_eq!(
        held_and_counted(&db).await,
        [(a.to_string(), "EvDue".to_owned(), 1, true), (a.to_string(), "EvStranded".to_owned(), 1, true),],
        "each taken event held and counted, nothing else (b's EvDue neither)"
    );
    assert_eq!(taken_ids(&store, a, 10).await, [], "held and counted: taken once");
    assert_eq!(taken_ids(&store, b, 10).await, [("EvDue".to_owned(), 1), ("EvOther".to_owned(), 1)]);
}

/// Every receipt with a redelivery counted or a payload held: (tenant, event id, count, held).
async fn held_and_counted(db: &TestDatabase) -> Vec<(String, String, i16, bool)> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        tenant: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
        #[diesel(sql_type = diesel::sql_types::SmallInt)]
        redeliveries: i16,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        held: bool,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT r.tenant_id::text AS tenant, r.external_event_id AS id, r.redeliveries, \
                coalesce(p.leased_until > now(), false) AS held \
           FROM messaging_event_receipts AS r \
           LEFT JOIN messaging_event_payloads AS p USING (tenant_id, platform, external_event_id) \
          WHERE r.redeliveries > 0 OR p.leased_until IS NOT NULL \
          ORDER BY 1, 2",
    )
    .load(&mut db.owner().await)
    .await
    .unwrap();
    let mut rows: Vec<_> = rows.into_iter().map(|r| (r.tenant, r.id, r.redeliveries, r.held)).collect();
    rows.sort();
    rows
}

#[tokio::test]
async fn a_redelivery_is_counted_held_from_a_replay_and_due_again_only_after_its_next_delay() {
    let db = TestDatabase::create().await;
    let a = tenant_with_team(&db.operator(), "T1").await;
    let receipts = receipt_store(db.pool());
    receipts.claim(&kept(a, "EvR", Duration::minutes(5))).await.unwrap();
    let store = store(&db);
    assert_eq!(taken_ids(&store, a, 1).await, [("EvR".to_owned(), 1)]);

    let replays = PgStoredEvents::new(db.pool(), Arc::new(test_keys()));
    let hold = Utc::now() + Duration::minutes(2);
    assert_eq!(
        replays.take(&key(a, "EvR"), hold).await.unwrap(),
        ReplayTake::InProgress,
        "a replay by hand waits"
    );

    // The redelivery failed: the hold ends, and the next delay (1 h) counts from its end.
    receipts.record_failure(&key(a, "EvR"), &failed("refused", Utc::now())).await.unwrap();
    assert_eq!(taken_ids(&store, a, 1).await, [], "not before an hour");
    owner_runs(&db, "UPDATE messaging_event_receipts SET failed_at = now() - interval '61 minutes'").await;
    assert_eq!(taken_ids(&store, a, 1).await, [("EvR".to_owned(), 2)]);

    // Put back (its agent was paused meanwhile): not spent, taken again as the same redelivery.
    store.put_back(&key(a, "EvR")).await.unwrap();
    assert_eq!(taken_ids(&store, a, 1).await, [("EvR".to_owned(), 2)]);
}

#[tokio::test]
async fn two_takers_at_once_never_take_the_same_event() {
    let db = TestDatabase::create().await;
    let a = tenant_with_team(&db.operator(), "T1").await;
    let receipts = receipt_store(db.pool());
    for n in 0..40 {
        receipts.claim(&kept(a, &format!("Ev{n:02}"), Duration::minutes(5))).await.unwrap();
    }
    let (one, two) = (store(&db), store(&db));
    let (first, second) = tokio::join!(taken_ids(&one, a, 25), taken_ids(&two, a, 25));
    assert_eq!(first.len() + second.len(), 40, "every one taken: {} + {}", first.len(), second.len());
    assert!(first.iter().all(|id| !second.contains(id)), "an event taken twice");
}

#[tokio::test]
async fn a_spent_schedule_is_given_up_once_and_its_payload_released_unless_kept_for_replay() {
    let db = TestDatabase::create().await;
    let a = tenant_with_team(&db.operator(), "T1").await;
    let receipts = receipt_store(db.pool());
    for event in ["EvSpent", "EvKeep", "EvLeft", "EvHeld"] {
        receipts.claim(&kept(a, event, Duration::minutes(5))).await.unwrap();
        receipts
            .record_failure(&key(a, event), &failed("agent answered HTTP 500", Utc::now()))
            .await
            .unwrap();
    }
    owner_runs(
        &db,
        "UPDATE messaging_event_receipts SET redeliveries = 2 WHERE external_event_id <> 'EvLeft'",
    )
    .await;
    // Spent, but its last redelivery still holds it (its outcome may yet be written): not yet.
    owner_runs(
        &db,
        "UPDATE messaging_event_payloads SET leased_until = now() + interval '1 minute' WHERE external_event_id = 'EvHeld'",
    )
    .await;
    let store = store(&db);

    let spent = |keep| {
        let store = store.clone();
        async move {
            let mut ids: Vec<String> = store
                .give_up(a, &schedule(), 1, keep)
                .await
                .unwrap()
                .into_iter()
                .map(|k| k.external_id.as_str().to_owned())
                .collect();
            ids.sort();
            ids
        }
    };
    // One at a time (limit 1), oldest claim first: EvSpent released, then EvKeep kept.
    assert_eq!(spent(false).await, ["EvSpent"]);
    assert_eq!(spent(true).await, ["EvKeep"]);
    assert_eq!(
        spent(false).await,
        Vec::<String>::new(),
        "given up once; EvLeft has redeliveries left; EvHeld is held"
    );
    let replays = PgStoredEvents::new(db.pool(), Arc::new(test_keys()));
    let hold = Utc::now() + Duration::minutes(2);
    assert!(matches!(replays.take(&key(a, "EvKeep"), hold).await.unwrap(), ReplayTake::Event { .. }));
    assert_eq!(replays.take(&key(a, "EvSpent"), hold).await.unwrap(), ReplayTake::NoPayload);
    assert_eq!(taken_ids(&store, a, 10).await, [], "nothing spent is taken");
}

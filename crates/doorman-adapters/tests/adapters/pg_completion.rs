//! Completing, failing and pruning receipts.

use chrono::Duration;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::admin::PgLedger;
use doorman_adapters::postgres::schema::{
    messaging_event_attempts as attempts, messaging_event_receipts as receipts,
};
use doorman_adapters::postgres::{PoolSettings, pool};
use doorman_domain::ports::{Ledger, ReceiptStore};
use doorman_domain::{AttemptRecord, Delivered, FailureKind, FirstDelivery};
use doorman_testkit::FaultProxy;
use doorman_testkit::database::{TestDatabase, receipt_store, with_address};

use crate::fixtures::{days_ago, delivered, failed, key, now, receipt, tenant_with_team};

type Row = (String, Option<chrono::DateTime<chrono::Utc>>, Option<String>);

async fn rows(db: &TestDatabase) -> Vec<Row> {
    receipts::table
        .select((receipts::external_event_id, receipts::handled_at, receipts::failure_reason))
        .order(receipts::external_event_id)
        .load(&mut db.owner().await)
        .await
        .unwrap()
}

#[tokio::test]
async fn complete_sets_handled_at_once() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(tenant, "Ev1", now())).await.unwrap();

    let first = now();
    store.complete(&key(tenant, "Ev1"), &delivered(first), days_ago(7), 100).await.unwrap();
    store
        .complete(&key(tenant, "Ev1"), &delivered(first + Duration::seconds(30)), days_ago(7), 100)
        .await
        .unwrap();

    assert_eq!(rows(&db).await, vec![("Ev1".into(), Some(first), None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_batch_that_meets_a_closed_connection_is_written_on_a_fresh_one() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let proxy = FaultProxy::start(db.server_addr()).await;
    let pool = pool::connect(&with_address(db.url(), proxy.addr()), &PoolSettings::default());
    let store = receipt_store(pool);
    store.claim(&receipt(tenant, "EvHandled", now())).await.unwrap();
    store.claim(&receipt(tenant, "EvFailed", now())).await.unwrap();

    // The connection dies under the batch's statement, as in a cut or a database restart.
    // The binds carry the event id (the statement's text is sent once per connection).
    proxy.cut_when_client_sends(b"EvHandled");
    let handled = now();
    store.complete(&key(tenant, "EvHandled"), &delivered(handled), days_ago(7), 100).await.unwrap();
    proxy.cut_when_client_sends(b"EvFailed");
    let failure = failed("agent answered HTTP 502", now());
    store.record_failure(&key(tenant, "EvFailed"), &failure).await.unwrap();

    assert_eq!(
        rows(&db).await,
        vec![
            ("EvFailed".into(), None, Some("agent answered HTTP 502".into())),
            ("EvHandled".into(), Some(handled), None),
        ]
    );
    assert!(proxy.accepted() >= 3, "each retry opened a fresh connection: {}", proxy.accepted());
}

#[tokio::test]
async fn a_recorded_failure_keeps_handled_at_null() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(tenant, "Ev1", now())).await.unwrap();

    let failure = failed("agent answered HTTP 502", now());
    store.record_failure(&key(tenant, "Ev1"), &failure).await.unwrap();

    assert_eq!(rows(&db).await, vec![("Ev1".into(), None, Some("agent answered HTTP 502".into()))]);
}

#[tokio::test]
async fn prune_removes_only_that_tenants_expired_receipts_and_no_more_than_the_batch() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    for i in 0..5 {
        store.claim(&receipt(a, &format!("OldA{i}"), days_ago(30))).await.unwrap();
    }
    store.claim(&receipt(b, "OldB", days_ago(30))).await.unwrap();
    store.claim(&receipt(a, "RecentA", days_ago(1))).await.unwrap();
    store.claim(&receipt(a, "Current", now())).await.unwrap();

    let completion = store.complete(&key(a, "Current"), &delivered(now()), days_ago(7), 3).await.unwrap();
    assert_eq!(completion.pruned, 3, "at most the batch");
    let left: Vec<String> = rows(&db).await.into_iter().map(|r| r.0).collect();
    assert_eq!(left.iter().filter(|id| id.starts_with("OldA")).count(), 2);
    assert!(left.contains(&"OldB".to_string()), "another tenant's receipts are never pruned");
    assert!(left.contains(&"RecentA".to_string()) && left.contains(&"Current".to_string()));

    let again = store.complete(&key(a, "Current"), &delivered(now()), days_ago(7), 3).await.unwrap();
    assert_eq!(again.pruned, 2);
}

#[tokio::test]
async fn a_first_delivery_keeps_its_start_and_status_on_the_receipt_and_is_no_attempt_row() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(tenant, "Ev1", now())).await.unwrap();
    let at = now();
    let first = Delivered { status: 202, ..delivered(at) };
    store.complete(&key(tenant, "Ev1"), &first, days_ago(7), 100).await.unwrap();
    // Completed again (an outcome sent twice): the first stays.
    let later = Delivered { status: 200, ..delivered(at + Duration::seconds(5)) };
    store.complete(&key(tenant, "Ev1"), &later, days_ago(7), 100).await.unwrap();

    let ledger = PgLedger::new(db.admin_pool(), None);
    let found = ledger.receipt(&key(tenant, "Ev1")).await.unwrap().unwrap();
    assert_eq!(
        found.receipt.first_delivery,
        Some(FirstDelivery { started_at: first.started_at, status: 202 })
    );
    assert_eq!(found.receipt.handled_at, Some(at));
    assert!(ledger.attempts(&key(tenant, "Ev1")).await.unwrap().is_empty(), "a success rides on its receipt");
}

#[tokio::test]
async fn a_failed_dispatch_is_an_attempt_on_record_once_with_what_the_agent_answered() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(tenant, "Ev1", now())).await.unwrap();
    let failure = failed("agent answered HTTP 500", now());
    store.record_failure(&key(tenant, "Ev1"), &failure).await.unwrap();
    // The same outcome sent again (its write was not confirmed) is the same attempt.
    store.record_failure(&key(tenant, "Ev1"), &failure).await.unwrap();
    // A replay that fails, then one that succeeds: attempts of their own.
    let at = now() + Duration::seconds(60);
    let replay_failed = AttemptRecord {
        replay: true,
        status: None,
        failure: Some(FailureKind::Timeout),
        reason: Some("agent did not answer within 60 s".into()),
        answer: None,
        ..failed("", at)
    };
    store.record_failure(&key(tenant, "Ev1"), &replay_failed).await.unwrap();
    let replayed = Delivered { replay: true, ..delivered(at + Duration::seconds(60)) };
    store.complete(&key(tenant, "Ev1"), &replayed, days_ago(7), 100).await.unwrap();

    let ledger = PgLedger::new(db.admin_pool(), None);
    let attempts = ledger.attempts(&key(tenant, "Ev1")).await.unwrap();
    let succeeded = AttemptRecord {
        started_at: replayed.started_at,
        ended_at: replayed.ended_at,
        replay: true,
        status: Some(200),
        failure: None,
        reason: None,
        answer: None,
    };
    assert_eq!(attempts, vec![failure, replay_failed, succeeded]);
    assert_eq!(attempts[0].latency_ms(), 40);
    let found = ledger.receipt(&key(tenant, "Ev1")).await.unwrap().unwrap().receipt;
    assert_eq!(found.handled_at, Some(replayed.ended_at));
    assert_eq!(found.first_delivery, None, "a replay's success is its own attempt, not the first delivery");
}

#[tokio::test]
async fn attempts_expire_with_the_receipts_and_only_the_tenants_own() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "TA").await, tenant_with_team(&op, "TB").await);
    let store = receipt_store(db.pool());
    for (tenant, event) in [(a, "OldA"), (b, "OldB")] {
        store.claim(&receipt(tenant, event, days_ago(30))).await.unwrap();
        store
            .record_failure(&key(tenant, event), &failed("agent answered HTTP 500", days_ago(30)))
            .await
            .unwrap();
    }
    store.claim(&receipt(a, "RecentA", days_ago(1))).await.unwrap();
    store.record_failure(&key(a, "RecentA"), &failed("agent answered HTTP 500", days_ago(1))).await.unwrap();
    store.claim(&receipt(a, "Current", now())).await.unwrap();

    store.complete(&key(a, "Current"), &delivered(now()), days_ago(7), 10).await.unwrap();
    let left: Vec<String> = attempts::table
        .select(attempts::external_event_id)
        .order(attempts::external_event_id)
        .load(&mut db.owner().await)
        .await
        .unwrap();
    assert_eq!(left, ["OldB", "RecentA"], "A's expired attempt went with its receipt; B's stays");
}

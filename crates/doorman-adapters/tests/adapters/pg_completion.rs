//! Completing, failing and pruning receipts.

use chrono::Duration;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::schema::messaging_event_receipts as receipts;
use doorman_adapters::postgres::{PoolSettings, pool};
use doorman_domain::Failure;
use doorman_domain::ports::ReceiptStore;
use doorman_testkit::FaultProxy;
use doorman_testkit::database::{TestDatabase, receipt_store, with_address};

use crate::fixtures::{days_ago, key, now, receipt, tenant_with_team};

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
    store.complete(&key(tenant, "Ev1"), first, days_ago(7), 100).await.unwrap();
    store.complete(&key(tenant, "Ev1"), first + Duration::seconds(30), days_ago(7), 100).await.unwrap();

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
    store.complete(&key(tenant, "EvHandled"), handled, days_ago(7), 100).await.unwrap();
    proxy.cut_when_client_sends(b"EvFailed");
    let failure = Failure { reason: "agent answered HTTP 502".into(), at: now() };
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

    let failure = Failure { reason: "agent answered HTTP 502".into(), at: now() };
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

    let completion = store.complete(&key(a, "Current"), now(), days_ago(7), 3).await.unwrap();
    assert_eq!(completion.pruned, 3, "at most the batch");
    let left: Vec<String> = rows(&db).await.into_iter().map(|r| r.0).collect();
    assert_eq!(left.iter().filter(|id| id.starts_with("OldA")).count(), 2);
    assert!(left.contains(&"OldB".to_string()), "another tenant's receipts are never pruned");
    assert!(left.contains(&"RecentA".to_string()) && left.contains(&"Current".to_string()));

    let again = store.complete(&key(a, "Current"), now(), days_ago(7), 3).await.unwrap();
    assert_eq!(again.pruned, 2);
}

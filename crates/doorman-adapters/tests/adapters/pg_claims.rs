//! The unique index arbitrates claims: within a request, across requests, across tenants.

use std::sync::Arc;

use doorman_adapters::postgres::PoolSettings;
use doorman_domain::Claim;
use doorman_domain::ports::ReceiptStore;
use doorman_testkit::database::{TestDatabase, receipt_store};

use crate::fixtures::{now, receipt, tenant_with_team};

#[tokio::test]
async fn a_second_claim_of_the_same_event_is_a_duplicate() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&mut db.operator().await, "T1").await;
    let store = receipt_store(db.pool());

    assert_eq!(store.claim(&receipt(tenant, "Ev1", now())).await.unwrap(), Claim::Claimed);
    assert_eq!(store.claim(&receipt(tenant, "Ev1", now())).await.unwrap(), Claim::Duplicate);
    assert_eq!(store.claim(&receipt(tenant, "Ev2", now())).await.unwrap(), Claim::Claimed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_claims_of_one_event_yield_exactly_one_claimed() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&mut db.operator().await, "T1").await;
    let store = Arc::new(receipt_store(db.pool_with(&PoolSettings { max_size: 32, ..Default::default() })));

    let claims = (0..64).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, "EvRace", now())).await })
    });
    let outcomes: Vec<Claim> =
        futures_util::future::join_all(claims).await.into_iter().map(|r| r.unwrap().unwrap()).collect();

    assert_eq!(outcomes.iter().filter(|c| **c == Claim::Claimed).count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|c| **c == Claim::Duplicate).count(), 63);
}

#[tokio::test]
async fn the_same_event_id_under_two_tenants_is_claimed_by_both() {
    let db = TestDatabase::create().await;
    let mut op = db.operator().await;
    let a = tenant_with_team(&mut op, "TA").await;
    let b = tenant_with_team(&mut op, "TB").await;
    let store = receipt_store(db.pool());

    assert_eq!(store.claim(&receipt(a, "EvShared", now())).await.unwrap(), Claim::Claimed);
    assert_eq!(store.claim(&receipt(b, "EvShared", now())).await.unwrap(), Claim::Claimed);
}

#[tokio::test]
async fn an_unreachable_database_is_unavailable_not_a_panic() {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let pool = doorman_adapters::postgres::pool::connect(
        "postgres://postgres@127.0.0.1:1/none",
        &PoolSettings { connection_timeout: std::time::Duration::from_millis(300), ..Default::default() },
    );
    let store = receipt_store(pool);
    let error = store.claim(&receipt(doorman_domain::TenantId::generate(), "Ev1", now())).await.unwrap_err();
    assert!(matches!(error, doorman_domain::StorageError::Unavailable(_)), "{error:?}");
}

//! The unique index arbitrates claims: within a request, across requests, across tenants.

use std::sync::Arc;
use std::time::Duration;

use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::{ClaimTimeouts, GroupSettings, PgReceiptStore, pool};
use doorman_domain::{Fingerprint, StorageError};
use doorman_testkit::FaultProxy;
use doorman_testkit::database::with_address;

use doorman_adapters::postgres::PoolSettings;
use doorman_domain::Claim;
use doorman_domain::ports::ReceiptStore;
use doorman_testkit::database::{TestDatabase, receipt_store, test_keys};

use crate::fixtures::{now, receipt, tenant_with_team};

#[tokio::test]
async fn a_second_claim_of_the_same_event_is_a_duplicate() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());

    assert_eq!(store.claim(&receipt(tenant, "Ev1", now())).await.unwrap(), Claim::Claimed);
    assert_eq!(store.claim(&receipt(tenant, "Ev1", now())).await.unwrap(), Claim::Duplicate);
    assert_eq!(store.claim(&receipt(tenant, "Ev2", now())).await.unwrap(), Claim::Claimed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_claims_of_one_event_yield_exactly_one_claimed() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
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
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_claims_of_fifty_keys_across_two_processes_stores_claim_each_key_once() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    // Two stores on two pools: as two processes would be.
    let stores = [Arc::new(receipt_store(db.pool())), Arc::new(receipt_store(db.pool()))];

    let claims = (0..200).map(|i| {
        let store = stores[i % 2].clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, &format!("EvKey{}", i % 50), now())).await })
    });
    let outcomes: Vec<Claim> =
        futures_util::future::join_all(claims).await.into_iter().map(|r| r.unwrap().unwrap()).collect();

    assert_eq!(outcomes.iter().filter(|c| **c == Claim::Claimed).count(), 50, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|c| **c == Claim::Duplicate).count(), 150);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_twice_in_one_batch_is_claimed_once() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    // One batch at a time and a slow database: while the first batch is on the wire the
    // rest queue up and travel together.
    let proxy = FaultProxy::start(db.server_addr()).await;
    let pool = pool::connect(&with_address(db.url(), proxy.addr()), &PoolSettings::default());
    let settings = GroupSettings { max_batch: 64, in_flight: 1 };
    let store = Arc::new(PgReceiptStore::with_settings(
        pool,
        Arc::new(test_keys()),
        settings,
        ClaimTimeouts::default(),
    ));
    assert_eq!(store.claim(&receipt(tenant, "EvWarm", now())).await.unwrap(), Claim::Claimed);
    proxy.delay(Duration::from_millis(50));
    // Its binds carry the event id (the statement's text is sent once per connection).
    proxy.watch_client(b"EvOther");

    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, "EvOther", now())).await })
    };
    // The first batch is on the wire (held by the proxy): the writer is busy until it commits.
    proxy.wait_for_client(1, Duration::from_secs(10)).await;
    let same = (0..10).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, "EvTwice", now())).await })
    });
    let outcomes: Vec<Claim> =
        futures_util::future::join_all(same).await.into_iter().map(|r| r.unwrap().unwrap()).collect();
    assert_eq!(first.await.unwrap().unwrap(), Claim::Claimed);
    assert_eq!(outcomes.iter().filter(|c| **c == Claim::Claimed).count(), 1, "{outcomes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_the_database_refuses_fails_only_its_own_claim_not_the_batch() {
    let db = TestDatabase::create().await;
    let (a, b) = (tenant_with_team(&db.operator(), "T1").await, tenant_with_team(&db.operator(), "T2").await);
    let (proxy, store) = poisoned(&db).await;
    // While the first batch is on the wire, the next gathers: tenant B's poisoned row among
    // tenant A's and B's good ones.
    let first = first_batch_held(&store, &proxy, a).await;
    let claims = (0..12).map(|i| {
        let store = store.clone();
        let (tenant, id) = match i {
            5 => (b, "EvPoison".to_owned()),
            i if i % 2 == 0 => (a, format!("EvGood{i}")),
            i => (b, format!("EvGood{i}")),
        };
        tokio::spawn(async move { (id.clone(), store.claim(&receipt(tenant, &id, now())).await) })
    });
    let outcomes: Vec<(String, Result<Claim, StorageError>)> =
        futures_util::future::join_all(claims).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(first.await.unwrap().unwrap(), Claim::Claimed);
    for (id, outcome) in outcomes {
        if id == "EvPoison" {
            assert!(matches!(outcome, Err(StorageError::Unexpected(_))), "{id}: {outcome:?}");
        } else {
            assert_eq!(outcome, Ok(Claim::Claimed), "{id} was in the poisoned row's batch");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settle_queued_beside_fresh_claims_does_not_make_their_failures_its_own() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let (proxy, store) = poisoned(&db).await;
    let first = first_batch_held(&store, &proxy, tenant).await;
    // Queued together behind the first batch: a settle, and a fresh claim the database refuses.
    let settling = {
        let store = store.clone();
        tokio::spawn(async move { store.settle(&receipt(tenant, "EvSettle", now())).await })
    };
    let started = std::time::Instant::now();
    let fresh = store.claim(&receipt(tenant, "EvPoison", now())).await;
    // Refused at once, as a fresh claim is: not retried as a settle until the claim's time is
    // up and then answered unconfirmed.
    assert!(matches!(fresh, Err(StorageError::Unexpected(_))), "{fresh:?}");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(settling.await.unwrap().unwrap(), Claim::Claimed);
    assert_eq!(first.await.unwrap().unwrap(), Claim::Claimed);
}

/// A claim that keeps its payload, as a retaining tenant's does.
fn kept(tenant: doorman_domain::TenantId, event_id: &str) -> doorman_domain::NewReceipt {
    doorman_domain::NewReceipt {
        retained: Some(doorman_domain::Payload::from_json_text("{}".to_owned())),
        ..receipt(tenant, event_id, now())
    }
}

/// 32 claims gathered into one batch behind `EvFirst`'s (held on a slow connection), each
/// answered with its event id, in order.
async fn thirty_two_in_one_batch(
    store: &Arc<PgReceiptStore>,
    claim: impl Fn(usize) -> doorman_domain::NewReceipt,
) -> Vec<(String, Result<Claim, StorageError>)> {
    let claims = (0..32).map(|i| {
        let (store, claim) = (store.clone(), claim(i));
        tokio::spawn(async move { (claim.key.external_id.as_str().to_owned(), store.claim(&claim).await) })
    });
    futures_util::future::join_all(claims).await.into_iter().map(Result::unwrap).collect()
}

/// A refusal of the statement itself (a revoked grant; a missing function would be the same)
/// is not about any one row: halving the batch would send 2N-1 statements that all fail the
/// same way and, on a slow connection, outlast the claims' time so that they are answered
/// unconfirmed although nothing was written. The batch is sent once and each claim is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_statement_is_refused_is_sent_once_and_every_claim_answered_refused() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let proxy = FaultProxy::start(db.server_addr()).await;
    let store = store_through(&db, &proxy, ClaimTimeouts::default());
    let first = first_batch_held(&store, &proxy, tenant).await;
    // Claims that keep payloads now fail as a statement: the role may not write them.
    diesel::sql_query("REVOKE INSERT ON messaging_event_payloads FROM doorman_app")
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    proxy.watch_client(b"EvKept");
    let outcomes = thirty_two_in_one_batch(&store, |i| kept(tenant, &format!("EvKept{i}"))).await;
    assert_eq!(first.await.unwrap().unwrap(), Claim::Claimed);
    assert_eq!(proxy.client_chunks_seen(), 1, "one statement for the 32 claims");
    for (id, outcome) in &outcomes {
        assert!(
            matches!(outcome, Err(StorageError::Unexpected(said)) if said.contains("permission denied")),
            "{id}: refused, named as what it is: {outcome:?}"
        );
    }
    assert_eq!(count_like(&db, "EvKept%").await, 0);
}

/// When every row of a batch is refused (a CHECK), finding which takes halving; on a slow
/// connection that outlasts the claims' time. What was never sent, or sent and refused, is
/// answered as not written (refused, or unavailable), never as unconfirmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_every_row_is_refused_answers_each_claim_as_not_written_never_unconfirmed() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let (proxy, store) = poisoned(&db).await;
    diesel::sql_query(
        "ALTER TABLE messaging_event_receipts ADD CONSTRAINT test_poison_all CHECK (external_event_id NOT LIKE 'EvBad%')",
    )
    .execute(&mut db.owner().await)
    .await
    .unwrap();
    let first = first_batch_held(&store, &proxy, tenant).await;
    proxy.delay(Duration::from_millis(150));
    let outcomes = thirty_two_in_one_batch(&store, |i| receipt(tenant, &format!("EvBad{i}"), now())).await;
    assert_eq!(first.await.unwrap().unwrap(), Claim::Claimed);
    for (id, outcome) in &outcomes {
        assert!(
            matches!(outcome, Err(StorageError::Unexpected(_) | StorageError::Unavailable(_))),
            "{id}: not written, and said so: {outcome:?}"
        );
    }
    assert_eq!(count_like(&db, "EvBad%").await, 0);
}

/// A database that refuses any receipt for `EvPoison` (standing in for any row it will not
/// take: a constraint, a value), and a store reaching it through a proxy.
async fn poisoned(db: &TestDatabase) -> (FaultProxy, Arc<PgReceiptStore>) {
    diesel::sql_query(
        "ALTER TABLE messaging_event_receipts ADD CONSTRAINT test_poison CHECK (external_event_id <> 'EvPoison')",
    )
    .execute(&mut db.owner().await)
    .await
    .unwrap();
    let proxy = FaultProxy::start(db.server_addr()).await;
    let store = store_through(db, &proxy, ClaimTimeouts::default());
    (proxy, store)
}

/// Claims `EvFirst` for `tenant` and returns once its batch is on the wire, held by the proxy:
/// whatever is claimed next gathers into the following batch.
async fn first_batch_held(
    store: &Arc<PgReceiptStore>,
    proxy: &FaultProxy,
    tenant: doorman_domain::TenantId,
) -> tokio::task::JoinHandle<Result<Claim, StorageError>> {
    assert_eq!(store.claim(&receipt(tenant, "EvWarm", now())).await.unwrap(), Claim::Claimed);
    proxy.delay(Duration::from_millis(50));
    proxy.watch_client(b"EvFirst");
    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, "EvFirst", now())).await })
    };
    proxy.wait_for_client(1, Duration::from_secs(10)).await;
    first
}

/// A store whose one pool reaches the database through `proxy`, batching up to 64 claims.
fn store_through(db: &TestDatabase, proxy: &FaultProxy, timeouts: ClaimTimeouts) -> Arc<PgReceiptStore> {
    let pool = pool::connect(&with_address(db.url(), proxy.addr()), &PoolSettings::default());
    let settings = GroupSettings { max_batch: 64, in_flight: 1 };
    Arc::new(PgReceiptStore::with_settings(pool, Arc::new(test_keys()), settings, timeouts))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_cut_on_its_way_is_settled_on_a_fresh_connection_and_each_event_claimed_once() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let proxy = FaultProxy::start(db.server_addr()).await;
    let store = store_through(&db, &proxy, ClaimTimeouts::default());
    assert_eq!(store.claim(&receipt(tenant, "EvWarm", now())).await.unwrap(), Claim::Claimed);

    // Cut with the statement on its way: whether it committed is unknown to the store, which
    // settles the batch by its claims on a fresh connection before answering.
    proxy.cut_when_client_sends(b"EvCut");
    proxy.delay(Duration::from_millis(30));
    let claims = (0..20).map(|i| {
        let store = store.clone();
        tokio::spawn(async move { store.claim(&receipt(tenant, &format!("EvCut{i}"), now())).await })
    });
    let outcomes: Vec<_> =
        futures_util::future::join_all(claims).await.into_iter().map(|r| r.unwrap()).collect();
    proxy.delay(Duration::ZERO);

    for (i, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome, &Ok(Claim::Claimed), "EvCut{i}");
        assert_eq!(count(&db, &format!("EvCut{i}")).await, 1, "EvCut{i}: one receipt");
        assert_eq!(
            store.claim(&receipt(tenant, &format!("EvCut{i}"), now())).await.unwrap(),
            Claim::Duplicate,
            "EvCut{i}: a retry finds it claimed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_committed_whose_answer_was_lost_is_found_by_its_claim() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let proxy = FaultProxy::start(db.server_addr()).await;
    let store = store_through(&db, &proxy, ClaimTimeouts::default());

    // The database commits, then dies before its answer is out; it is back a moment later.
    proxy.lose_answer_to(b"EvLost");
    proxy.watch_client(b"doorman_settle_receipts");
    let claim = receipt(tenant, "EvLost", now());
    let claiming = {
        let (store, claim) = (store.clone(), claim.clone());
        tokio::spawn(async move { store.claim(&claim).await })
    };
    wait_until_refused(&proxy).await;
    assert_eq!(count(&db, "EvLost").await, 1, "the lost answer's claim committed");
    proxy.restore().await;

    assert_eq!(claiming.await.unwrap(), Ok(Claim::Claimed), "found, within the claim's time");
    proxy.wait_for_client(1, Duration::from_secs(10)).await;
    assert_eq!(count(&db, "EvLost").await, 1);
    assert_eq!(store.claim(&receipt(tenant, "EvLost", now())).await.unwrap(), Claim::Duplicate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_cannot_be_settled_in_time_is_unconfirmed_and_settled_later() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let proxy = FaultProxy::start(db.server_addr()).await;
    let timeouts = ClaimTimeouts { confirm_within: Duration::from_millis(300), ..ClaimTimeouts::default() };
    let store = store_through(&db, &proxy, timeouts);

    proxy.lose_answer_to(b"EvLate");
    let claim = receipt(tenant, "EvLate", now());
    let error = store.claim(&claim).await.unwrap_err();
    assert!(matches!(error, StorageError::Unconfirmed(_)), "{error:?}");

    // While it is down, settling waits; once it is back, the claim is found to be this one's.
    let settling = {
        let (store, claim) = (store.clone(), claim.clone());
        tokio::spawn(async move { store.settle(&claim).await })
    };
    proxy.restore().await;
    assert_eq!(settling.await.unwrap(), Ok(Claim::Claimed));
    assert_eq!(count(&db, "EvLate").await, 1);
}

#[tokio::test]
async fn settling_claims_what_nothing_holds_and_finds_what_another_claim_holds() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());

    let never_written = receipt(tenant, "EvNever", now());
    assert_eq!(store.settle(&never_written).await, Ok(Claim::Claimed), "made now");
    assert_eq!(store.settle(&never_written).await, Ok(Claim::Claimed), "and found again");
    let other_delivery = receipt(tenant, "EvNever", now());
    assert_eq!(store.settle(&other_delivery).await, Ok(Claim::Duplicate));
    assert_eq!(store.claim(&other_delivery).await, Ok(Claim::Duplicate));
    assert_eq!(count(&db, "EvNever").await, 1);
}

/// Waits until the proxy has stopped listening (it lost an answer).
async fn wait_until_refused(proxy: &FaultProxy) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(proxy.addr()).await.is_ok() {
        assert!(tokio::time::Instant::now() < deadline, "the proxy never lost an answer");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn count(db: &TestDatabase, event_id: &str) -> i64 {
    count_where(db, "external_event_id = $1", event_id).await
}

async fn count_like(db: &TestDatabase, pattern: &str) -> i64 {
    count_where(db, "external_event_id LIKE $1", pattern).await
}

async fn count_where(db: &TestDatabase, condition: &str, value: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(format!("SELECT count(*) AS n FROM messaging_event_receipts WHERE {condition}"))
        .bind::<diesel::sql_types::Text, _>(value)
        .get_result::<Found>(&mut db.owner().await)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn a_request_fingerprint_is_recorded_once_per_tenant_until_it_expires() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    let fingerprint = |expires_in: i64| {
        Fingerprint::new(format!("v0={}", "ab".repeat(32)), now() + chrono::Duration::seconds(expires_in))
            .unwrap()
    };

    assert_eq!(store.claim_request(a, &fingerprint(300)).await.unwrap(), Claim::Claimed);
    assert_eq!(store.claim_request(a, &fingerprint(300)).await.unwrap(), Claim::Duplicate, "a replay");
    assert_eq!(store.claim_request(b, &fingerprint(300)).await.unwrap(), Claim::Claimed, "tenant-local");

    // Past its window the record is no longer needed: the signature itself is refused as
    // stale before it could be replayed, and the record gives way.
    let stale = Fingerprint::new("v0=stale", now() - chrono::Duration::seconds(1)).unwrap();
    assert_eq!(store.claim_request(a, &stale).await.unwrap(), Claim::Claimed);
    assert_eq!(store.claim_request(a, &stale).await.unwrap(), Claim::Claimed, "expired: replaced");
}

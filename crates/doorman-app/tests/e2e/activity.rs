//! A serving process's activity counts (ADR 28) against a real rollup: each flush adds what was
//! counted since the last one, once, and a flush the database refuses keeps its counts for the
//! next one.

use std::time::Duration;

use doorman_adapters::postgres::pool::connect;
use doorman_adapters::postgres::{PgActivity, PoolSettings};
use doorman_app::slack::activity::ActivityCounts;
use doorman_domain::{DispatchError, Handled, TenantId};
use doorman_testkit::database::TestDatabase;

/// The rollup's (delivered, failed) for `tenant`, summed over its hours, read as the owner.
async fn counted(db: &TestDatabase, tenant: TenantId) -> (i64, i64) {
    use diesel::QueryableByName;
    use diesel_async::RunQueryDsl;
    #[derive(QueryableByName)]
    struct Sums {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        delivered: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        failed: i64,
    }
    let mut owner = db.owner().await;
    let sums: Sums = diesel::sql_query(
        "SELECT coalesce(sum(delivered), 0)::bigint AS delivered, coalesce(sum(failed), 0)::bigint AS failed \
         FROM messaging_activity_hours WHERE tenant_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(*tenant.as_uuid())
    .get_result(&mut owner)
    .await
    .unwrap();
    (sums.delivered, sums.failed)
}

fn two_dispatches(counts: &ActivityCounts, tenant: TenantId) {
    let now = chrono::Utc::now();
    counts.record(tenant, now, &Handled::Delivered { pruned: 0 }, Duration::from_millis(30));
    let failed = Handled::Failed { error: DispatchError::TimedOut(60), recorded: true };
    counts.record(tenant, now, &failed, Duration::from_millis(60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_flush_adds_what_was_counted_since_the_last_once() {
    let db = TestDatabase::create().await;
    let rollup = PgActivity::new(db.pool());
    let counts = ActivityCounts::default();
    let tenant = TenantId::generate();
    two_dispatches(&counts, tenant);
    counts.flush(&rollup).await;
    assert_eq!(counted(&db, tenant).await, (1, 1));
    counts.flush(&rollup).await;
    assert_eq!(counted(&db, tenant).await, (1, 1), "a flush with nothing new adds nothing");
    two_dispatches(&counts, tenant);
    counts.flush(&rollup).await;
    assert_eq!(counted(&db, tenant).await, (2, 2), "only what came since");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_the_database_refuses_keeps_its_counts_for_the_next() {
    let db = TestDatabase::create().await;
    let settings = PoolSettings { connection_timeout: Duration::from_millis(300), ..PoolSettings::default() };
    // Nothing listens on port 1: the flush cannot reach a database.
    let unreachable = PgActivity::new(connect("postgres://postgres@127.0.0.1:1/nowhere", &settings));
    let counts = ActivityCounts::default();
    let tenant = TenantId::generate();
    two_dispatches(&counts, tenant);
    counts.flush(&unreachable).await;
    two_dispatches(&counts, tenant);
    counts.flush(&PgActivity::new(db.pool())).await;
    assert_eq!(counted(&db, tenant).await, (2, 2), "the refused flush's counts, and the new ones");
}

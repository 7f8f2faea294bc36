//! The activity rollup (issue 42) on real PostgreSQL: a serving process's counts added to
//! another's, hour by hour, each tenant reading its own; the overview across tenants as the
//! admin role (the tenants failing most, the agents failing or disabled), never a receipt read.

use chrono::{DateTime, Duration, Utc};
use doorman_adapters::postgres::{PgActivity, PgAgentHealth, PgAgents, PgLedger};
use doorman_domain::ports::{Agents, Ledger};
use doorman_domain::{ActivityHour, TenantId, hour_of};
use doorman_testkit::database::TestDatabase;

use crate::fixtures::tenant_with_team;

fn counted(hour: DateTime<Utc>, delivered: u64, failed: u64, ms: u64, max: u32) -> ActivityHour {
    ActivityHour { hour, delivered, failed, dispatch_ms: ms, dispatch_ms_max: max }
}

#[tokio::test]
async fn two_processes_counts_add_up_by_hour_each_tenant_reads_its_own_and_the_overview_ranks_failures() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b, quiet) = (
        tenant_with_team(&op, "T1").await,
        tenant_with_team(&op, "T2").await,
        tenant_with_team(&op, "T3").await,
    );
    let rollup = PgActivity::new(db.pool());
    let now = hour_of(Utc::now());
    let earlier = now - Duration::hours(2);
    let keep_after = now - Duration::days(8);
    // Two processes' flushes of the same hours, and an hour past the keeping, dropped.
    rollup
        .add(
            &[
                (a, counted(earlier, 5, 1, 60, 30)),
                (a, counted(now, 2, 0, 10, 6)),
                (b, counted(now, 1, 4, 50, 20)),
            ],
            keep_after,
        )
        .await
        .unwrap();
    rollup
        .add(&[(a, counted(now, 3, 2, 40, 9)), (b, counted(now - Duration::days(9), 7, 7, 0, 0))], keep_after)
        .await
        .unwrap();
    rollup.add(&[], keep_after).await.unwrap();

    let ledger = PgLedger::new(db.admin_pool(), None);
    let of_a = ledger.activity(a, earlier).await.unwrap();
    assert_eq!(
        of_a,
        [counted(earlier, 5, 1, 60, 30), counted(now, 5, 2, 50, 9)],
        "added up, the longest kept"
    );
    assert_eq!(ledger.activity(a, now).await.unwrap(), [counted(now, 5, 2, 50, 9)], "from the hour asked");
    let of_b = ledger.activity(b, now - Duration::days(10)).await.unwrap();
    assert_eq!(of_b, [counted(now, 1, 4, 50, 20)], "its own only, the hour past the keeping dropped");
    assert!(ledger.activity(quiet, earlier).await.unwrap().is_empty());

    // Across tenants: the most failures first, a tenant without failures not listed.
    let failing = ledger.failing_most(earlier, 10).await.unwrap();
    let ranked: Vec<(TenantId, u64, u64)> =
        failing.iter().map(|t| (t.tenant, t.failed, t.delivered)).collect();
    assert_eq!(ranked, [(b, 4, 1), (a, 3, 10)]);
    assert_eq!(failing[0].name, "tenant T2", "named");
    assert_eq!(ledger.failing_most(earlier, 1).await.unwrap().len(), 1, "at most the limit");
    assert_eq!(
        ledger.failing_most(now + Duration::hours(1), 10).await.unwrap(),
        [],
        "since a later hour: none"
    );

    // Agents failing or disabled now, across tenants, the longest failing first.
    let agents = PgAgents::new(db.admin_pool(), None);
    assert!(agents.troubled(10).await.unwrap().is_empty());
    let health = PgAgentHealth::new(db.pool());
    health.failing(b, Utc::now() - Duration::minutes(5)).await.unwrap();
    health.failing(quiet, Utc::now() - Duration::hours(1)).await.unwrap();
    let troubled: Vec<TenantId> = agents.troubled(10).await.unwrap().into_iter().map(|t| t.tenant).collect();
    assert_eq!(troubled, [quiet, b]);
    health.recovered(quiet).await.unwrap();
    let troubled: Vec<TenantId> = agents.troubled(10).await.unwrap().into_iter().map(|t| t.tenant).collect();
    assert_eq!(troubled, [b], "recovered: failing no more");
}

/// Runs the background sweep (the gauges' `doorman_sweep_receipts`) up to `before`.
async fn sweep(db: &TestDatabase, before: &str) {
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!("SELECT doorman_sweep_receipts(now() - interval '{before}')")),
        &mut db.owner().await,
    )
    .await
    .unwrap();
}

/// The overview's stranded events, across tenants as the admin role: each tenant's receipts
/// the sweep marked that are still stranded, the most first, at most the limit. Not counted: a
/// receipt that failed (before the sweep looked, or after it marked it), one handled after it
/// was marked (a replay), one in flight, and one stranded since the sweep, which the next sweep
/// counts (as the gauge does). Reading changes no row.
#[tokio::test]
async fn the_overview_counts_each_tenants_stranded_receipts_as_the_sweep_marked_them_the_most_first() {
    use doorman_domain::ports::ReceiptStore;

    use crate::fixtures::{delivered, failed, key, receipt};

    let db = TestDatabase::create().await;
    let op = db.operator();
    let (few, many, failing, handled) = (
        tenant_with_team(&op, "T1").await,
        tenant_with_team(&op, "T2").await,
        tenant_with_team(&op, "T3").await,
        tenant_with_team(&op, "T4").await,
    );
    let store = doorman_testkit::database::receipt_store(db.pool());
    let ago = |minutes| Utc::now() - Duration::minutes(minutes);
    for (tenant, id) in [
        (many, "Many1"),
        (many, "Many2"),
        (many, "Many3"),
        (few, "Few1"),
        (few, "Replayed"),
        (failing, "FailedFirst"),
        (failing, "FailedLater"),
        (handled, "Handled"),
    ] {
        store.claim(&receipt(tenant, id, ago(40))).await.unwrap();
    }
    store
        .record_failure(&key(failing, "FailedFirst"), &failed("agent answered HTTP 500", ago(39)))
        .await
        .unwrap();
    store.complete(&key(handled, "Handled"), &delivered(ago(39)), ago(60 * 24 * 7), 10).await.unwrap();
    sweep(&db, "30 minutes").await;
    // After the sweep marked them: one failed, one handled by a replay.
    store
        .record_failure(&key(failing, "FailedLater"), &failed("agent answered HTTP 500", ago(1)))
        .await
        .unwrap();
    store.complete(&key(few, "Replayed"), &delivered(ago(1)), ago(60 * 24 * 7), 10).await.unwrap();
    store.claim(&receipt(many, "StrandedSince", ago(20))).await.unwrap();
    store.claim(&receipt(few, "InFlight", ago(0))).await.unwrap();

    let before = db.every_row().await;
    let ledger = PgLedger::new(db.admin_pool(), None);
    let threshold = ago(10);
    let counted = async |before, limit| -> Vec<(TenantId, String, u64)> {
        let found = ledger.stranded_most(before, limit).await.unwrap();
        found.into_iter().map(|t| (t.tenant, t.name, t.stranded)).collect()
    };
    assert_eq!(
        counted(threshold, 10).await,
        [(many, "tenant T2".to_owned(), 3), (few, "tenant T1".to_owned(), 1)],
        "the most first; failed, replayed, handled, in flight and stranded since the sweep left out"
    );
    assert_eq!(counted(threshold, 1).await, [(many, "tenant T2".to_owned(), 3)], "at most the limit");
    assert_eq!(counted(ago(45), 10).await, [], "none was claimed before an earlier threshold");
    assert_eq!(db.every_row().await, before, "a read changed rows");

    // The next sweep marks the one stranded since, and it is counted.
    sweep(&db, "10 minutes").await;
    assert_eq!(
        counted(ago(10), 10).await,
        [(many, "tenant T2".to_owned(), 4), (few, "tenant T1".to_owned(), 1)]
    );
}

/// The stranded count's statement, as the adapter sends it, over 50,000 handled receipts and
/// no statistics (autovacuum is off here, as in CI): it reads the partial index of receipts the
/// sweep marked, never the table nor an index of every receipt.
#[tokio::test]
async fn the_stranded_count_reads_only_the_index_of_receipts_the_sweep_marked() {
    use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
    use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
    use doorman_adapters::postgres::admin::STRANDED_BY_TENANT;
    use doorman_adapters::postgres::pool::act_for_tenants;

    let db = TestDatabase::create().await;
    let op = db.operator();
    let tenants = [tenant_with_team(&op, "T1").await, tenant_with_team(&op, "T2").await];
    db.owner()
        .await
        .batch_execute(&format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, \
                    delivery_attempt, claimed_at, handled_at)
             SELECT CASE WHEN n % 2 = 0 THEN '{}'::uuid ELSE '{}'::uuid END, 'slack', 'EvH' || n, 'message', 0,
                    now() - make_interval(secs => n), now() - make_interval(secs => n)
               FROM generate_series(1, 50000) AS n;
             INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, \
                    delivery_attempt, claimed_at, swept_at)
             SELECT '{}'::uuid, 'slack', 'EvS' || n, 'message', 0, now() - interval '1 hour', now()
               FROM generate_series(1, 10) AS n;",
            tenants[0], tenants[1], tenants[0]
        ))
        .await
        .unwrap();

    #[derive(diesel::QueryableByName)]
    struct Plan {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }
    let ids: Vec<uuid::Uuid> = tenants.iter().map(|t| *t.as_uuid()).collect();
    let pool = db.admin_pool();
    let mut unit = pool.unit().await.unwrap();
    let plan = unit
        .transaction::<Vec<Plan>, diesel::result::Error, _>(async |conn| {
            act_for_tenants(conn, &ids).await?;
            diesel::sql_query(format!("EXPLAIN {STRANDED_BY_TENANT}"))
                .bind::<Array<diesel::sql_types::Uuid>, _>(ids.clone())
                .bind::<Timestamptz, _>(Utc::now() - Duration::minutes(10))
                .bind::<BigInt, _>(10)
                .load(conn)
                .await
        })
        .await
        .unwrap();
    let plan = plan.into_iter().map(|p| p.line).collect::<Vec<_>>().join("\n");
    assert!(
        plan.contains("on messaging_event_receipts_swept")
            && !plan.contains("Seq Scan")
            && !plan.contains("messaging_event_receipts_expiry")
            && !plan.contains("messaging_event_receipts_pkey"),
        "{plan}"
    );
}

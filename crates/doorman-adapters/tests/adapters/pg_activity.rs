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

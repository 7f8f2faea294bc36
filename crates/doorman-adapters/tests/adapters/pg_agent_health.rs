//! Agents failing for days, on real PostgreSQL as the server's role: the first failure's time
//! is kept, a success clears it, and only an agent seen failing recently is disabled (paused and
//! audited as Doorman's own); one no process saw fail lately is failing no more.

use chrono::{Duration, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::PgAgentHealth;
use doorman_adapters::postgres::schema::{admin_audit, agent_bridges};
use doorman_domain::TenantId;
use doorman_testkit::database::TestDatabase;

use crate::fixtures::tenant_with_team;

type Health =
    (Option<chrono::DateTime<Utc>>, Option<chrono::DateTime<Utc>>, bool, Option<chrono::DateTime<Utc>>);

async fn shown(db: &TestDatabase, tenant: TenantId) -> Health {
    agent_bridges::table
        .filter(agent_bridges::tenant_id.eq(tenant.as_uuid()))
        .select((
            agent_bridges::failing_since,
            agent_bridges::failing_seen_at,
            agent_bridges::paused,
            agent_bridges::disabled_at,
        ))
        .first(&mut db.owner().await)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_first_failure_is_kept_a_success_clears_it_and_only_an_agent_seen_failing_lately_is_disabled() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (seen, unseen, recovered) = (
        tenant_with_team(&op, "T1").await,
        tenant_with_team(&op, "T2").await,
        tenant_with_team(&op, "T3").await,
    );
    let health = PgAgentHealth::new(db.pool());
    let days_ago = |d: i64| Utc::now() - Duration::days(d);

    for tenant in [seen, unseen, recovered] {
        health.failing(tenant, days_ago(6)).await.unwrap();
        health.failing(tenant, days_ago(2)).await.unwrap(); // a later first failure keeps the earlier
    }
    let (since, seen_at, _, _) = shown(&db, seen).await;
    assert!(since.unwrap() < days_ago(5), "the first failure: {since:?}");
    assert!(seen_at.unwrap() > Utc::now() - Duration::minutes(1));
    health.recovered(recovered).await.unwrap();
    assert_eq!(shown(&db, recovered).await, (None, None, false, None), "a success clears it");
    diesel::update(agent_bridges::table.filter(agent_bridges::tenant_id.eq(unseen.as_uuid())))
        .set(agent_bridges::failing_seen_at.eq(Some(days_ago(1))))
        .execute(&mut db.owner().await)
        .await
        .unwrap();

    let disabled = health.disable_failing(days_ago(5), Utc::now() - Duration::minutes(10)).await.unwrap();
    assert_eq!(
        disabled.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        [seen],
        "only the one seen failing lately"
    );
    let (_, _, paused, disabled_at) = shown(&db, seen).await;
    assert!(paused && disabled_at.is_some());
    assert_eq!(
        shown(&db, unseen).await,
        (None, None, false, None),
        "not seen failing for a day: failing no more"
    );
    let audited: Vec<(String, String, Option<uuid::Uuid>)> = admin_audit::table
        .filter(admin_audit::action.eq("agent.disable"))
        .select((admin_audit::actor_kind, admin_audit::actor_name, admin_audit::tenant_id))
        .load(&mut db.owner().await)
        .await
        .unwrap();
    assert_eq!(audited, [("doorman".to_owned(), "doorman".to_owned(), Some(*seen.as_uuid()))]);
    assert!(
        health.disable_failing(days_ago(5), Utc::now() - Duration::minutes(10)).await.unwrap().is_empty(),
        "once"
    );
}

//! Workspace → tenant resolution, in every install form.

use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::PgTenantDirectory;
use doorman_adapters::postgres::directory::AGENT_SECRET_COLUMN;
use doorman_adapters::secrets::SealedIn;
use doorman_domain::ports::TenantDirectory;
use doorman_domain::{Agent, AgentEndpoint, Platform, WorkspaceRef};
use std::sync::Arc;

use doorman_testkit::database::{TestDatabase, test_keys};

use crate::fixtures::{AGENT_SECRET, AGENT_URL, tenant_with_team, ws};

#[tokio::test]
async fn a_linked_team_resolves_to_its_tenant_and_agent() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));

    let found = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
    assert_eq!(found.id, tenant);
    let Agent::Ready(agent) = found.agent else { panic!("agent configured: {:?}", found.agent) };
    assert_eq!(agent.url.as_str(), AGENT_URL);
    assert_eq!(agent.secret.expose_whsec(), AGENT_SECRET, "opened from its sealed form");
    assert!(!agent.paused);
}

#[tokio::test]
async fn an_unknown_workspace_resolves_to_nothing() {
    let db = TestDatabase::create().await;
    tenant_with_team(&db.operator(), "T1").await;
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));

    assert_eq!(directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T2"))).await.unwrap(), None);
}

#[tokio::test]
async fn an_org_wide_install_resolves_by_enterprise_and_a_team_link_wins_only_what_says_it_is_a_teams() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let org = op.create_tenant("org").await;
    op.link(org, None, Some("E1")).await.unwrap();
    let team = tenant_with_team(&op, "T9").await;
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));

    let org_wide = WorkspaceRef::new(None, Some(ws("E1")), true).unwrap();
    let resolved = directory.resolve(Platform::Slack, &org_wide).await.unwrap().unwrap();
    assert_eq!(resolved.id, org);
    assert_eq!(resolved.agent, Agent::NotSet, "no agent set for the org tenant");

    let team_in_org = WorkspaceRef::new(Some(ws("T5")), Some(ws("E1")), false).unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &team_in_org).await.unwrap().unwrap().id, org);

    let linked_team_in_org = WorkspaceRef::new(Some(ws("T9")), Some(ws("E1")), false).unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &linked_team_in_org).await.unwrap().unwrap().id, team);

    // A delivery that does not say which install it is for goes to the enterprise's org-wide
    // link before a team link (decision 20), and one that says org-wide never to a team link.
    let unstated = WorkspaceRef::delivered(Some(ws("T9")), Some(ws("E1")), None).unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &unstated).await.unwrap().unwrap().id, org);
    let org_wide_from_t9 = WorkspaceRef::delivered(Some(ws("T9")), Some(ws("E1")), Some(true)).unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &org_wide_from_t9).await.unwrap().unwrap().id, org);
    let unstated_alone = WorkspaceRef::delivered(Some(ws("T9")), None, None).unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &unstated_alone).await.unwrap().unwrap().id, team);
}

#[tokio::test]
async fn a_paused_bridge_is_reported_paused() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let tenant = tenant_with_team(&op, "T1").await;
    op.pause(tenant, true).await.unwrap();
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));

    let found = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
    assert!(matches!(found.agent, Agent::Ready(AgentEndpoint { paused: true, .. })));
}

#[tokio::test]
async fn a_stored_agent_that_does_not_convert_resolves_unusable() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    // Written by hand, past the operator's checks (as an old row or a manual edit would be):
    // a bad URL; a secret too short once opened; a secret stored unsealed; a sealed secret
    // copied from another tenant's row.
    let keys = test_keys();
    let sealed =
        |tenant, text: &str| keys.seal(text.as_bytes(), SealedIn { tenant, column: AGENT_SECRET_COLUMN });
    let short = sealed(tenant, "whsec_c2hvcnQ=");
    let good = sealed(tenant, AGENT_SECRET);
    let elsewhere = sealed(doorman_domain::TenantId::generate(), AGENT_SECRET);
    for (url, secret) in [
        ("not a url", good.as_str()),
        (AGENT_URL, short.as_str()),
        (AGENT_URL, AGENT_SECRET),
        (AGENT_URL, elsewhere.as_str()),
    ] {
        diesel::sql_query("UPDATE agent_bridges SET url = $1, signing_secret = $2 WHERE tenant_id = $3")
            .bind::<Text, _>(url)
            .bind::<Text, _>(secret)
            .bind::<diesel::sql_types::Uuid, _>(tenant.as_uuid())
            .execute(&mut db.owner().await)
            .await
            .unwrap();
        let found = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
        assert!(matches!(found.agent, Agent::Unusable(_)), "{url}: {:?}", found.agent);
        assert!(!format!("{:?}", found.agent).contains("c2hvcnQ"), "the secret is not quoted");
    }
}

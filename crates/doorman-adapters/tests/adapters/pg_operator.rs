//! The operator adapter: provisioning errors, stranded and failed listings, pruning all tenants.

use std::num::NonZeroU32;

use chrono::Duration;
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{AgentSecret, AgentUrl, Failure, OperatorError, Platform, TenantId, WorkspaceRef};
use doorman_testkit::database::{TestDatabase, receipt_store, test_keys};

use crate::fixtures::{AGENT_SECRET, AGENT_URL, days_ago, key, name, now, receipt, tenant_with_team, ws};

#[tokio::test]
async fn a_workspace_links_to_one_tenant_only() {
    let db = TestDatabase::create().await;
    let mut op = db.operator().await;
    tenant_with_team(&mut op, "T1").await;
    let other = op.create_tenant(&name("other")).await.unwrap();

    let error = op.link_workspace(other, Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap_err();
    assert_eq!(error, OperatorError::WorkspaceTaken);
    let org_wide = WorkspaceRef::new(None, Some(ws("E1")), true).unwrap();
    op.link_workspace(other, Platform::Slack, &org_wide).await.unwrap();
    let error = op.link_workspace(other, Platform::Slack, &org_wide).await.unwrap_err();
    assert_eq!(error, OperatorError::WorkspaceTaken, "org-wide links are unique too");
}

#[tokio::test]
async fn actions_on_an_unknown_tenant_or_a_missing_agent_say_so_without_cli_wording() {
    let db = TestDatabase::create().await;
    let mut op = db.operator().await;
    let ghost = TenantId::generate();
    assert_eq!(op.set_paused(ghost, true).await, Err(OperatorError::UnknownTenant(ghost)));
    let (url, secret) = (AgentUrl::parse(AGENT_URL).unwrap(), AgentSecret::parse(AGENT_SECRET).unwrap());
    assert_eq!(
        op.set_agent(ghost, &url, &secret, &test_keys()).await,
        Err(OperatorError::UnknownTenant(ghost))
    );
    let no_agent = op.create_tenant(&name("bare")).await.unwrap();
    let error = op.set_paused(no_agent, true).await.unwrap_err();
    assert_eq!(error, OperatorError::NoAgent(no_agent));
    assert!(!error.to_string().contains("doorman "), "no command named: {error}");
}

#[tokio::test]
async fn stranded_lists_old_unhandled_unfailed_receipts_only() {
    let db = TestDatabase::create().await;
    let mut op = db.operator().await;
    let a = tenant_with_team(&mut op, "TA").await;
    let b = tenant_with_team(&mut op, "TB").await;
    let store = receipt_store(db.pool());
    let old = now() - Duration::minutes(30);
    for (tenant, id) in [(a, "Stranded"), (a, "Handled"), (a, "Failed"), (b, "StrandedB")] {
        store.claim(&receipt(tenant, id, old)).await.unwrap();
    }
    store.claim(&receipt(a, "Recent", now())).await.unwrap();
    store.complete(&key(a, "Handled"), now(), days_ago(7), 10).await.unwrap();
    store
        .record_failure(&key(a, "Failed"), &Failure { reason: "agent answered HTTP 500".into(), at: now() })
        .await
        .unwrap();

    let threshold = now() - Duration::minutes(10);
    let all: Vec<String> =
        op.stranded(threshold, None).await.unwrap().iter().map(|r| r.key.external_id.to_string()).collect();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&"Stranded".into()) && all.contains(&"StrandedB".into()));
    let only_a = op.stranded(threshold, Some(a)).await.unwrap();
    assert_eq!(only_a.len(), 1);
    assert_eq!(only_a[0].key.tenant, a);

    let failed = op.failed(None).await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].failure.as_ref().unwrap().reason, "agent answered HTTP 500");
    assert_eq!(failed[0].handled_at, None);
}

#[tokio::test]
async fn prune_deletes_every_tenants_expired_receipts_in_batches() {
    let db = TestDatabase::create().await;
    let mut op = db.operator().await;
    let a = tenant_with_team(&mut op, "TA").await;
    let b = tenant_with_team(&mut op, "TB").await;
    let store = receipt_store(db.pool());
    for i in 0..4 {
        store.claim(&receipt(a, &format!("A{i}"), days_ago(10))).await.unwrap();
        store.claim(&receipt(b, &format!("B{i}"), days_ago(10))).await.unwrap();
    }
    store.claim(&receipt(a, "Fresh", now())).await.unwrap();

    assert_eq!(op.prune_expired(days_ago(7), NonZeroU32::new(3).unwrap()).await.unwrap(), 8);
    assert_eq!(op.stranded(now() + Duration::minutes(1), None).await.unwrap().len(), 1);
}

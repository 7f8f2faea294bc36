//! Operator queries: provisioning errors, stranded and failed listings, pruning all tenants.

use chrono::Duration;
use doorman_adapters::postgres::admin::{self, AdminError};
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{Failure, Platform, TenantId};
use doorman_testkit::database::{TestDatabase, receipt_store};

use crate::fixtures::{days_ago, key, now, receipt, tenant_with_team, ws};

#[tokio::test]
async fn a_workspace_links_to_one_tenant_only() {
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    tenant_with_team(&mut owner, "T1").await;
    let other = admin::create_tenant(&mut owner, "other").await.unwrap();

    let error =
        admin::link_workspace(&mut owner, other, Platform::Slack, Some(&ws("T1")), None).await.unwrap_err();
    assert!(matches!(error, AdminError::Conflict(_)), "{error}");
    admin::link_workspace(&mut owner, other, Platform::Slack, None, Some(&ws("E1"))).await.unwrap();
    let error =
        admin::link_workspace(&mut owner, other, Platform::Slack, None, Some(&ws("E1"))).await.unwrap_err();
    assert!(matches!(error, AdminError::Conflict(_)), "org-wide links are unique too: {error}");
}

#[tokio::test]
async fn commands_on_an_unknown_tenant_say_so() {
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    let ghost = TenantId::generate();
    assert!(matches!(admin::set_paused(&mut owner, ghost, true).await, Err(AdminError::UnknownTenant(_))));
    assert!(matches!(
        admin::set_agent(&mut owner, ghost, "http://x", "whsec_eA==").await,
        Err(AdminError::UnknownTenant(_))
    ));
    let no_agent = admin::create_tenant(&mut owner, "bare").await.unwrap();
    assert!(matches!(admin::set_paused(&mut owner, no_agent, true).await, Err(AdminError::NoAgent(_))));
}

#[tokio::test]
async fn stranded_lists_old_unhandled_unfailed_receipts_only() {
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    let a = tenant_with_team(&mut owner, "TA").await;
    let b = tenant_with_team(&mut owner, "TB").await;
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
    let all: Vec<String> = admin::stranded(&mut owner, threshold, None)
        .await
        .unwrap()
        .iter()
        .map(|r| r.key.external_id.to_string())
        .collect();
    assert_eq!(all.len(), 2);
    assert!(all.contains(&"Stranded".into()) && all.contains(&"StrandedB".into()));
    let only_a = admin::stranded(&mut owner, threshold, Some(a)).await.unwrap();
    assert_eq!(only_a.len(), 1);
    assert_eq!(only_a[0].key.tenant, a);

    let failed = admin::failed(&mut owner, None).await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].failure.as_ref().unwrap().reason, "agent answered HTTP 500");
    assert_eq!(failed[0].handled_at, None);
}

#[tokio::test]
async fn prune_all_deletes_every_tenants_expired_receipts_in_batches() {
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    let a = tenant_with_team(&mut owner, "TA").await;
    let b = tenant_with_team(&mut owner, "TB").await;
    let store = receipt_store(db.pool());
    for i in 0..4 {
        store.claim(&receipt(a, &format!("A{i}"), days_ago(10))).await.unwrap();
        store.claim(&receipt(b, &format!("B{i}"), days_ago(10))).await.unwrap();
    }
    store.claim(&receipt(a, "Fresh", now())).await.unwrap();

    assert_eq!(admin::prune_all(&mut owner, days_ago(7), 3).await.unwrap(), 8);
    assert_eq!(admin::stranded(&mut owner, now() + Duration::minutes(1), None).await.unwrap().len(), 1);
}

//! Shared set-up: tenants with workspaces and agents, receipts to claim.

use chrono::{DateTime, Duration, Utc};
use diesel_async::AsyncPgConnection;
use doorman_adapters::postgres::admin;
use doorman_domain::{ExternalEventId, Label, NewReceipt, Platform, ReceiptKey, TenantId, WorkspaceId};

pub fn ws(id: &str) -> WorkspaceId {
    WorkspaceId::new(id).unwrap()
}

/// A tenant with one linked team and an agent.
pub async fn tenant_with_team(conn: &mut AsyncPgConnection, team: &str) -> TenantId {
    let tenant = admin::create_tenant(conn, &format!("tenant {team}")).await.unwrap();
    admin::link_workspace(conn, tenant, Platform::Slack, Some(&ws(team)), None).await.unwrap();
    admin::set_agent(conn, tenant, "http://127.0.0.1:9/agent", "whsec_dGVzdHNlY3JldA==").await.unwrap();
    tenant
}

pub fn key(tenant: TenantId, event_id: &str) -> ReceiptKey {
    ReceiptKey { tenant, platform: Platform::Slack, external_id: ExternalEventId::new(event_id).unwrap() }
}

pub fn receipt(tenant: TenantId, event_id: &str, claimed_at: DateTime<Utc>) -> NewReceipt {
    NewReceipt {
        key: key(tenant, event_id),
        event_type: Label::new("event type", "app_mention").unwrap(),
        attempt: 0,
        claimed_at,
    }
}

/// A whole-second instant, so values round-trip through timestamptz exactly.
pub fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap()
}

pub fn days_ago(days: i64) -> DateTime<Utc> {
    now() - Duration::days(days)
}

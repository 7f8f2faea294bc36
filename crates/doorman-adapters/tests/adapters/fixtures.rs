//! Shared set-up: tenants with workspaces and agents, receipts to claim.

use chrono::{DateTime, Duration, Utc};
use doorman_domain::{
    ClaimId, ExternalEventId, Label, NewReceipt, Platform, ReceiptKey, TenantId, WorkspaceId,
};
use doorman_testkit::database::TestOperator;

pub fn ws(id: &str) -> WorkspaceId {
    WorkspaceId::new(id).unwrap()
}

/// A tenant with one linked team and an agent.
pub async fn tenant_with_team(operator: &TestOperator, team: &str) -> TenantId {
    doorman_testkit::database::tenant_with_agent(operator, team, AGENT_URL, AGENT_SECRET).await
}

pub const AGENT_URL: &str = "http://127.0.0.1:9/agent";
/// A valid `whsec_` secret (24 bytes).
pub const AGENT_SECRET: &str = "whsec_dGVzdC1hZ2VudC1zZWNyZXQtMjQtYnl0ZXM=";

pub fn key(tenant: TenantId, event_id: &str) -> ReceiptKey {
    ReceiptKey { tenant, platform: Platform::Slack, external_id: ExternalEventId::new(event_id).unwrap() }
}

pub fn receipt(tenant: TenantId, event_id: &str, claimed_at: DateTime<Utc>) -> NewReceipt {
    NewReceipt {
        key: key(tenant, event_id),
        claim: ClaimId::generate(),
        event_type: Label::new("event type", "app_mention").unwrap(),
        attempt: 0,
        claimed_at,
        retained: None,
    }
}

/// A whole-second instant, so values round-trip through timestamptz exactly.
pub fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap()
}

pub fn days_ago(days: i64) -> DateTime<Utc> {
    now() - Duration::days(days)
}

/// A first dispatch the agent took with 200, ended at `at` after 25 ms.
pub fn delivered(at: DateTime<Utc>) -> doorman_domain::Delivered {
    doorman_domain::Delivered {
        started_at: at - chrono::Duration::milliseconds(25),
        ended_at: at,
        status: 200,
        replay: false,
    }
}

/// A failed first dispatch with `reason`, ended at `at` after 40 ms, the agent having answered
/// 500 with a short body.
pub fn failed(reason: &str, at: DateTime<Utc>) -> doorman_domain::AttemptRecord {
    doorman_domain::AttemptRecord {
        started_at: at - chrono::Duration::milliseconds(40),
        ended_at: at,
        replay: false,
        status: Some(500),
        failure: Some(doorman_domain::FailureKind::Status),
        reason: Some(reason.to_owned()),
        answer: Some("{\"error\":\"down\"}".to_owned()),
    }
}

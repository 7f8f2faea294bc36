//! A tenant's activity by hour and support's overview (issue 42), as the admin API answers them
//! and the console draws them.

use chrono::{DateTime, Utc};
use doorman_domain::{Activity, ActivityHour, FailingTenant, Overview, StrandedTenant, TroubledAgent};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// One hour of a tenant's dispatches (each attempt once: a replay or a redelivery counts again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActivityHourDoc {
    /// The hour's start (UTC).
    pub hour: DateTime<Utc>,
    /// Dispatches the agent took.
    pub delivered: u64,
    /// Dispatches that failed.
    pub failed: u64,
    /// The mean dispatch time (request to answer written), in milliseconds; null without one.
    pub mean_ms: Option<u64>,
    /// The longest dispatch, in milliseconds.
    pub max_ms: u32,
}

impl From<&ActivityHour> for ActivityHourDoc {
    fn from(hour: &ActivityHour) -> Self {
        Self {
            hour: hour.hour,
            delivered: hour.delivered,
            failed: hour.failed,
            mean_ms: hour.mean_ms(),
            max_ms: hour.dispatch_ms_max,
        }
    }
}

/// A tenant's last hours, oldest first, every hour there (the quiet ones as zeros), and their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActivityDoc {
    pub tenant_id: Uuid,
    pub hours: Vec<ActivityHourDoc>,
    /// The window's sum (its `hour`: the first hour's start).
    pub total: ActivityHourDoc,
}

impl ActivityDoc {
    pub fn of(tenant: Uuid, activity: &Activity) -> Self {
        Self {
            tenant_id: tenant,
            hours: activity.hours.iter().map(ActivityHourDoc::from).collect(),
            total: ActivityHourDoc::from(&activity.total()),
        }
    }
}

/// A tenant among those failing most.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FailingTenantDoc {
    pub tenant_id: Uuid,
    pub name: String,
    pub failed: u64,
    pub delivered: u64,
}

/// A tenant among those with the most stranded events now; its list of them is
/// `GET /admin/v1/tenants/{id}/events?state=stranded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StrandedTenantDoc {
    pub tenant_id: Uuid,
    pub name: String,
    /// Its stranded events, as the last sweep marked them.
    pub stranded: u64,
}

/// A tenant whose agent is failing now (a serving process opened its circuit) or is disabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TroubledAgentDoc {
    pub tenant_id: Uuid,
    pub name: String,
    pub failing_since: Option<DateTime<Utc>>,
    pub disabled_at: Option<DateTime<Utc>>,
}

/// What is going wrong now, across tenants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OverviewDoc {
    /// Failures are counted from this hour's start on (the last 24 hours).
    pub since: DateTime<Utc>,
    /// The tenants with the most failed dispatches since then, most first (at most 10).
    pub failing_most: Vec<FailingTenantDoc>,
    /// The tenants with the most stranded events now, most first (at most 10): acknowledged to
    /// Slack, claimed over 10 minutes ago, never handled, no failure recorded. Counted as the
    /// serving processes' sweep (once a minute) marked them, as the `doorman_receipts_stranded`
    /// gauge counts them: an event stranded since is counted after the next sweep, and is
    /// already in its tenant's list (`GET /admin/v1/tenants/{id}/events?state=stranded`).
    pub stranded_most: Vec<StrandedTenantDoc>,
    /// Agents failing or disabled now, the longest failing first (at most 10).
    pub agents: Vec<TroubledAgentDoc>,
}

impl From<Overview> for OverviewDoc {
    fn from(overview: Overview) -> Self {
        let failing = |t: FailingTenant| FailingTenantDoc {
            tenant_id: *t.tenant.as_uuid(),
            name: t.name,
            failed: t.failed,
            delivered: t.delivered,
        };
        let stranded = |t: StrandedTenant| StrandedTenantDoc {
            tenant_id: *t.tenant.as_uuid(),
            name: t.name,
            stranded: t.stranded,
        };
        let agent = |a: TroubledAgent| TroubledAgentDoc {
            tenant_id: *a.tenant.as_uuid(),
            name: a.name,
            failing_since: a.failing_since,
            disabled_at: a.disabled_at,
        };
        Self {
            since: overview.since,
            failing_most: overview.failing_most.into_iter().map(failing).collect(),
            stranded_most: overview.stranded_most.into_iter().map(stranded).collect(),
            agents: overview.agents.into_iter().map(agent).collect(),
        }
    }
}

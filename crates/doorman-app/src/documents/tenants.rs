//! Tenants and what is set up for them: their workspace links, their agent, their install
//! links and installations.

use chrono::{DateTime, Utc};
use doorman_domain::{
    AgentSummary, InstallLink, InstallationSummary, LinkedWorkspace, RedeliverySchedule, TenantId,
    TenantRecord,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantDoc {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
    /// Keeps its claimed events' payloads (sealed) until they are handled, for replays.
    pub retain_payloads: bool,
    /// Sends its events that were not handled again on this schedule, keeping their payloads
    /// (sealed) until they are handled or given up; `null`: off.
    pub redelivery: Option<RedeliveryDoc>,
    /// Lets its read-only portal keys made with `read_payloads` read its kept payloads (off by
    /// default: such a key's events then show none, `payload_hidden` `not_allowed_by_tenant`).
    /// Other keys' permission is their own.
    pub read_only_portals_read_payloads: bool,
}

/// A tenant's redelivery schedule: the delays before each redelivery of an event, each counted
/// from the end of the attempt before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RedeliveryDoc {
    /// The delays in the operator's words, as `PUT …/redelivery` takes them.
    #[schema(example = "5s,5m,30m,2h,5h,10h,10h")]
    pub schedule: String,
    /// The same delays in seconds: 1 to 20 of them, each 0 to 86400.
    #[schema(min_items = 1, max_items = 20, value_type = Vec<u32>, example = json!([5, 300, 1800, 7200, 18000, 36000, 36000]))]
    pub seconds: Vec<i64>,
}

impl From<&RedeliverySchedule> for RedeliveryDoc {
    fn from(schedule: &RedeliverySchedule) -> Self {
        Self { schedule: schedule.to_string(), seconds: schedule.seconds() }
    }
}

impl From<TenantRecord> for TenantDoc {
    fn from(t: TenantRecord) -> Self {
        Self {
            id: *t.id.as_uuid(),
            name: t.name,
            created_at: t.created_at,
            retain_payloads: t.retain_payloads,
            redelivery: t.redelivery.as_ref().map(RedeliveryDoc::from),
            read_only_portals_read_payloads: t.read_only_portals_read_payloads,
        }
    }
}

/// What deleting a tenant removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OffboardedDoc {
    pub tenant_id: Uuid,
    /// Receipts deleted (its workspace links, installations, agent, kept payloads and scoped
    /// keys went with the tenant; its audit entries are kept).
    pub receipts_deleted: u64,
    /// The tenant is deleted, but deleting its receipts stopped (its `tenant.purge` audit
    /// entry says why): the next `doorman receipts prune` deletes those left.
    pub receipts_left: bool,
}

impl OffboardedDoc {
    pub fn new(
        tenant: TenantId,
        offboarded: &doorman_domain::usecases::operator::tenants::Offboarded,
    ) -> Self {
        Self {
            tenant_id: *tenant.as_uuid(),
            receipts_deleted: offboarded.receipts,
            receipts_left: offboarded.receipts_left,
        }
    }
}

super::counted_page_of!(
    /// A page of tenants, oldest first.
    TenantPage,
    TenantDoc
);
super::list_of!(
    /// A tenant's workspace links, oldest first.
    WorkspaceList,
    WorkspaceDoc
);

/// A workspace linked to a tenant: a team (maybe inside an enterprise), or an org-wide install
/// named by its enterprise alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceDoc {
    pub team_id: Option<String>,
    pub enterprise_id: Option<String>,
    pub org_wide: bool,
    pub linked_at: DateTime<Utc>,
}

impl From<LinkedWorkspace> for WorkspaceDoc {
    fn from(link: LinkedWorkspace) -> Self {
        let w = &link.workspace;
        Self {
            team_id: w.team_id().map(|t| t.to_string()),
            enterprise_id: w.enterprise_id().map(|e| e.to_string()),
            org_wide: w.is_enterprise_install(),
            linked_at: link.linked_at,
        }
    }
}

/// A tenant's agent setting. The signing secret is never returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentDoc {
    /// The whole URL dispatches go to, its query included; never credentials. `null`: no agent is set (the
    /// tenant's deliveries are answered 503 until one is).
    pub url: Option<String>,
    pub paused: bool,
    /// Whether an agent is set (always with its secret).
    pub signing_secret_set: bool,
    /// Since when every delivery to it has failed (a circuit opened and none has closed since).
    pub failing_since: Option<DateTime<Utc>>,
    /// When Doorman paused it for failing longer than `DOORMAN_AGENT_DISABLE_AFTER` (a resume
    /// clears it).
    pub disabled_at: Option<DateTime<Utc>>,
}

impl AgentDoc {
    /// No agent set.
    pub const NONE: Self =
        Self { url: None, paused: false, signing_secret_set: false, failing_since: None, disabled_at: None };
}

impl From<AgentSummary> for AgentDoc {
    fn from(agent: AgentSummary) -> Self {
        Self {
            url: Some(agent.url.shown()),
            paused: agent.paused,
            signing_secret_set: true,
            failing_since: agent.failing_since,
            disabled_at: agent.disabled_at,
        }
    }
}

/// An install link to hand a customer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstallLinkDoc {
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

impl From<InstallLink> for InstallLinkDoc {
    fn from(link: InstallLink) -> Self {
        Self { url: link.url, expires_at: link.expires_at }
    }
}

/// The Slack app's installation in a workspace: never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstallationDoc {
    pub tenant_id: Uuid,
    pub team_id: Option<String>,
    pub enterprise_id: Option<String>,
    pub is_enterprise_install: bool,
    pub app_id: String,
    pub bot_user_id: String,
    pub scopes: String,
    /// False once Slack revoked the bot token.
    pub has_bot_token: bool,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub installed_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<InstallationSummary> for InstallationDoc {
    fn from(i: InstallationSummary) -> Self {
        Self {
            tenant_id: *i.tenant.as_uuid(),
            team_id: i.workspace.team_id().map(|t| t.to_string()),
            enterprise_id: i.workspace.enterprise_id().map(|e| e.to_string()),
            is_enterprise_install: i.workspace.is_enterprise_install(),
            app_id: i.app_id,
            bot_user_id: i.bot_user_id,
            scopes: i.scopes,
            has_bot_token: i.has_bot_token,
            token_expires_at: i.token_expires_at,
            installed_at: i.installed_at,
            updated_at: i.updated_at,
        }
    }
}

//! The JSON documents both faces print: the admin API's bodies and the command line's
//! `--json` output are the same types, so a script can move from one face to the other. Their
//! schemas are generated from these types into the OpenAPI document (`docs/admin-api.json`).
//!
//! Never a secret: an agent's URL is shown without credentials or query, its secret only as
//! `signing_secret_set`, installations without tokens, keys without their secret.

use chrono::{DateTime, Utc};
use doorman_domain::{
    AgentSummary, AuditRecord, EventReport, InstallLink, InstallationSummary, KeySummary, LinkedWorkspace,
    ReplayOutcome, Replayed, TenantId, TenantRecord,
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
}

impl From<TenantRecord> for TenantDoc {
    fn from(t: TenantRecord) -> Self {
        Self {
            id: *t.id.as_uuid(),
            name: t.name,
            created_at: t.created_at,
            retain_payloads: t.retain_payloads,
        }
    }
}

/// A page of a listing. `next_cursor`: pass it as `cursor` for the next page; `null` on the
/// last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The documents of a use case's page, and its next cursor as opaque text.
    pub fn of<D, C: doorman_domain::Cursor>(page: doorman_domain::Page<D, C>) -> Self
    where
        T: From<D>,
    {
        Self {
            items: page.items.into_iter().map(T::from).collect(),
            next_cursor: page.next.map(|c| c.encode()),
        }
    }
}

/// A list that is never long enough to page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Items<T> {
    pub items: Vec<T>,
}

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

/// A tenant's agent. The signing secret is never returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentDoc {
    /// Scheme, host, port and path: no credentials, no query.
    pub url: String,
    pub paused: bool,
    /// Always true: an agent is set with its secret.
    pub signing_secret_set: bool,
}

impl From<AgentSummary> for AgentDoc {
    fn from(agent: AgentSummary) -> Self {
        Self { url: agent.url.redacted(), paused: agent.paused, signing_secret_set: true }
    }
}

/// Whether a tenant keeps payloads for replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RetainPayloadsDoc {
    pub enabled: bool,
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

/// Why an event's last dispatch failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FailureDoc {
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// What became of one event (`receipts show --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventDoc {
    pub tenant_id: Uuid,
    pub platform: String,
    pub external_event_id: String,
    pub event_type: String,
    /// The delivery attempt it was claimed on (0: Slack's first).
    pub delivery_attempt: u32,
    pub claimed_at: DateTime<Utc>,
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<FailureDoc>,
    /// `handled`, `failed`, `in_flight` or `stranded` (unfinished for over 10 minutes).
    #[schema(pattern = "^(handled|failed|in_flight|stranded)$")]
    pub status: String,
    /// The live dispatch and each replay.
    pub dispatches: u32,
    pub replays: u32,
    /// Its payload is kept (sealed), so it can be replayed.
    pub payload_kept: bool,
}

impl From<EventReport> for EventDoc {
    fn from(report: EventReport) -> Self {
        let r = &report.receipt;
        Self {
            tenant_id: *r.key.tenant.as_uuid(),
            platform: r.key.platform.as_str().to_owned(),
            external_event_id: r.key.external_id.as_str().to_owned(),
            event_type: r.event_type.clone(),
            delivery_attempt: r.attempt,
            claimed_at: r.claimed_at,
            handled_at: r.handled_at,
            failure: r.failure.as_ref().map(|f| FailureDoc { reason: f.reason.clone(), at: f.at }),
            status: report.status.as_str().to_owned(),
            dispatches: r.dispatches(),
            replays: r.replays,
            payload_kept: report.payload_kept,
        }
    }
}

/// What a replay did, event by event (`receipts replay --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayReport {
    pub tenant_id: Uuid,
    pub dry_run: bool,
    pub selected: usize,
    /// Handled by the agent (or, in a dry run, would be sent).
    pub succeeded: usize,
    pub events: Vec<ReplayedDoc>,
}

/// One event's replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayedDoc {
    pub external_event_id: String,
    /// `would_replay`, `handled`, `handled_unrecorded`, `failed`, `already_handled`,
    /// `no_payload`, `in_progress`, `unknown` or `not_sent`.
    pub outcome: String,
    pub detail: String,
}

impl ReplayReport {
    pub fn new(tenant: TenantId, dry_run: bool, report: &[Replayed]) -> Self {
        Self {
            tenant_id: *tenant.as_uuid(),
            dry_run,
            selected: report.len(),
            succeeded: report.iter().filter(|r| r.outcome.is_success()).count(),
            events: report
                .iter()
                .map(|r| ReplayedDoc {
                    external_event_id: r.key.external_id.as_str().to_owned(),
                    outcome: r.outcome.as_str().to_owned(),
                    detail: replay_detail(&r.outcome),
                })
                .collect(),
        }
    }
}

/// What a replay outcome means, for people.
pub fn replay_detail(outcome: &ReplayOutcome) -> String {
    match outcome {
        ReplayOutcome::WouldReplay => "would be sent again".into(),
        ReplayOutcome::Handled => "sent again; the agent took it; the receipt is handled".into(),
        ReplayOutcome::HandledUnrecorded => "sent again and taken, but the receipt could not be marked handled".into(),
        ReplayOutcome::Failed(reason) => format!("sent again; failed: {reason}"),
        ReplayOutcome::AlreadyHandled => "refused: already handled".into(),
        ReplayOutcome::NoPayload => {
            "refused: no payload kept (the tenant did not retain payloads when it was claimed: turn retain-payloads on for the next ones)".into()
        }
        ReplayOutcome::InProgress => "refused: another replay of it is in progress".into(),
        ReplayOutcome::Unknown => "refused: no receipt (never received, or pruned)".into(),
        ReplayOutcome::NotSent(why) => format!("not sent: {why}"),
    }
}

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditDoc {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// `key` or `cli`.
    pub actor_kind: String,
    /// The key's id, or the OS user who ran the command.
    pub actor_id: String,
    /// The key's name, or `cli`.
    pub actor_name: String,
    pub action: String,
    pub tenant_id: Option<Uuid>,
    pub target: Option<String>,
    pub request_id: String,
}

impl From<AuditRecord> for AuditDoc {
    fn from(r: AuditRecord) -> Self {
        Self {
            id: r.id,
            at: r.at,
            actor_kind: r.actor_kind,
            actor_id: r.actor_id,
            actor_name: r.actor_name,
            action: r.action,
            tenant_id: r.tenant.map(|t| *t.as_uuid()),
            target: r.target,
            request_id: r.request_id,
        }
    }
}

/// An admin API key, as `keys list --json` shows it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyDoc {
    pub id: Uuid,
    pub name: String,
    pub tenant_id: Option<Uuid>,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<KeySummary> for KeyDoc {
    fn from(k: KeySummary) -> Self {
        Self {
            id: *k.id.as_uuid(),
            name: k.name,
            tenant_id: k.scope.tenant.map(|t| *t.as_uuid()),
            read_only: k.scope.read_only,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

//! The JSON documents both faces print: the admin API's bodies and the command line's
//! `--json` output are the same types, so a script can move from one face to the other. Their
//! schemas are generated from these types into the OpenAPI document (`docs/admin-api.json`).
//!
//! Never a secret: an agent's URL is shown whole but without credentials, its secret only as
//! `signing_secret_set`, installations without tokens, keys without their secret.

use chrono::{DateTime, Utc};
use doorman_domain::{
    AgentSummary, Attempt, AuditRecord, EventReport, InstallLink, InstallationSummary, KeySummary,
    LinkedWorkspace, ReplayJob, Replayed, TenantId, TenantRecord,
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

/// A page of a listing, one named type per item type: generated clients get `TenantPage`
/// whose `items` are `TenantDoc`s (a `$ref`), not an anonymous copy of the item's schema.
macro_rules! page_of {
    ($(#[$doc:meta])* $page:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        pub struct $page {
            pub items: Vec<$item>,
            /// Pass it as `cursor` for the next page; `null` on the last.
            pub next_cursor: Option<String>,
        }

        impl $page {
            /// The documents of a use case's page, and its next cursor as opaque text.
            pub fn of<D, C: doorman_domain::Cursor>(page: doorman_domain::Page<D, C>) -> Self
            where
                $item: From<D>,
            {
                Self {
                    items: page.items.into_iter().map(<$item>::from).collect(),
                    next_cursor: page.next.map(|c| c.encode()),
                }
            }
        }
    };
}

/// A list never long enough to page, one named type per item type.
macro_rules! list_of {
    ($(#[$doc:meta])* $list:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        pub struct $list {
            pub items: Vec<$item>,
        }

        impl<D> FromIterator<D> for $list
        where
            $item: From<D>,
        {
            fn from_iter<I: IntoIterator<Item = D>>(items: I) -> Self {
                Self { items: items.into_iter().map(<$item>::from).collect() }
            }
        }
    };
}

page_of!(
    /// A page of tenants, oldest first.
    TenantPage,
    TenantDoc
);
page_of!(
    /// A page of events.
    EventPage,
    EventDoc
);
page_of!(
    /// A page of audit entries, newest first.
    AuditPage,
    AuditDoc
);
page_of!(
    /// A page of replay jobs, newest first.
    ReplayJobPage,
    ReplayJobDoc
);
list_of!(
    /// Every tenant (the command line's `tenant list --json`).
    TenantList,
    TenantDoc
);
list_of!(
    /// A tenant's workspace links, oldest first.
    WorkspaceList,
    WorkspaceDoc
);
list_of!(
    /// Installations, oldest first.
    InstallationList,
    InstallationDoc
);
list_of!(
    /// Admin API keys, oldest first.
    KeyList,
    KeyDoc
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
}

impl AgentDoc {
    /// No agent set.
    pub const NONE: Self = Self { url: None, paused: false, signing_secret_set: false };
}

impl From<AgentSummary> for AgentDoc {
    fn from(agent: AgentSummary) -> Self {
        Self { url: Some(agent.url.shown()), paused: agent.paused, signing_secret_set: true }
    }
}

/// Whether a tenant keeps payloads for replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
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
    /// `stranded`: unfinished for over 10 minutes.
    #[schema(value_type = words::EventStatus)]
    pub status: String,
    /// The live dispatch and each replay.
    pub dispatches: u32,
    pub replays: u32,
    /// Its payload is kept (sealed), so it can be replayed.
    pub payload_kept: bool,
    /// Each dispatch, oldest first: the live one, then every replay, with when and how it
    /// ended. Only when one event is read; a listing leaves it empty.
    pub attempts: Vec<AttemptDoc>,
}

/// One dispatch of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AttemptDoc {
    #[schema(value_type = words::AttemptKind)]
    pub kind: String,
    /// The replay job it was part of.
    pub job_id: Option<Uuid>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The live dispatch: as the event's status; a replay: its outcome, or `running`.
    #[schema(value_type = words::AttemptOutcome)]
    pub outcome: String,
    pub detail: Option<String>,
}

impl From<Attempt> for AttemptDoc {
    fn from(a: Attempt) -> Self {
        Self {
            kind: if a.job.is_some() { "replay" } else { "live" }.to_owned(),
            job_id: a.job.map(|j| *j.as_uuid()),
            started_at: a.started_at,
            ended_at: a.ended_at,
            outcome: a.outcome,
            detail: a.detail,
        }
    }
}

/// A replay job: what was asked, by whom, its progress, and each event's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayJobDoc {
    pub id: Uuid,
    pub tenant_id: Uuid,
    #[schema(value_type = words::JobState)]
    pub state: String,
    /// What it selected, in words (`failed since …`, `stranded before …`, `event Ev…`).
    pub selection: String,
    pub requested_by: ActorDoc,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Events selected.
    pub total: u32,
    /// Events with an outcome.
    pub done: u32,
    /// Events the agent took.
    pub succeeded: u32,
    /// Each event in order (empty in a listing of jobs).
    pub events: Vec<JobEventDoc>,
}

/// Who did something, as the audit trail names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActorDoc {
    #[schema(value_type = words::ActorKind)]
    pub kind: String,
    /// The key's id, or the OS user.
    pub id: String,
    /// The key's name, or `cli`.
    pub name: String,
}

/// One event of a replay job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct JobEventDoc {
    pub external_event_id: String,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// `null` until it has been tried.
    #[schema(value_type = Option<words::ReplayOutcome>)]
    pub outcome: Option<String>,
    pub detail: Option<String>,
}

impl From<ReplayJob> for ReplayJobDoc {
    fn from(job: ReplayJob) -> Self {
        let by = doorman_domain::AuditEntry::new(
            &job.requested_by,
            doorman_domain::AuditAction::EventsReplay,
            None,
            None,
        );
        Self {
            id: *job.id.as_uuid(),
            tenant_id: *job.tenant.as_uuid(),
            state: job.state().as_str().to_owned(),
            selection: job.selection,
            requested_by: ActorDoc {
                kind: by.actor_kind().to_owned(),
                id: by.actor_id(),
                name: by.actor_name(),
            },
            created_at: job.created_at,
            started_at: job.started_at,
            finished_at: job.finished_at,
            total: job.total,
            done: job.done,
            succeeded: job.succeeded,
            events: job
                .events
                .into_iter()
                .map(|e| JobEventDoc {
                    external_event_id: e.external_id.as_str().to_owned(),
                    started_at: e.started_at,
                    ended_at: e.ended_at,
                    outcome: e.outcome,
                    detail: e.detail,
                })
                .collect(),
        }
    }
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
            attempts: report.attempts.into_iter().map(AttemptDoc::from).collect(),
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
    #[schema(value_type = words::ReplayOutcome)]
    pub outcome: String,
    pub detail: String,
}

impl ReplayReport {
    /// A finished job's report (what the command line prints after running one).
    pub fn of_job(job: &ReplayJob) -> Self {
        Self {
            tenant_id: *job.tenant.as_uuid(),
            dry_run: false,
            selected: job.total as usize,
            succeeded: job.succeeded as usize,
            events: job
                .events
                .iter()
                .map(|e| ReplayedDoc {
                    external_event_id: e.external_id.as_str().to_owned(),
                    outcome: e.outcome.clone().unwrap_or_else(|| "not_sent".into()),
                    detail: e.detail.clone().unwrap_or_else(|| "not tried: the job stopped first".into()),
                })
                .collect(),
        }
    }

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
                    detail: r.outcome.detail(),
                })
                .collect(),
        }
    }
}

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditDoc {
    pub id: i64,
    pub at: DateTime<Utc>,
    #[schema(value_type = words::ActorKind)]
    pub actor_kind: String,
    /// The key's id, or the OS user who ran the command.
    pub actor_id: String,
    /// The key's name, or `cli`.
    pub actor_name: String,
    #[schema(value_type = words::AuditAction)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KeyDoc {
    pub id: Uuid,
    pub name: String,
    /// The one tenant it sees; `null`: every tenant.
    pub tenant_id: Option<Uuid>,
    /// It reads, never changes anything.
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    /// From then on it authenticates nothing; `null`: it does not expire.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it last authenticated a request (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
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
            expires_at: k.expires_at,
            last_used_at: k.last_used_at,
            revoked_at: k.revoked_at,
        }
    }
}

/// A key just made: what it is, and the key itself, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NewKeyDoc {
    #[serde(flatten)]
    pub key_doc: KeyDoc,
    /// `dmk_…`: send it as `Authorization: Bearer …`. Shown once; only its hash is stored.
    pub key: String,
}

impl NewKeyDoc {
    pub fn new(made: KeySummary, secret: &doorman_domain::KeySecret) -> Self {
        Self { key_doc: KeyDoc::from(made), key: secret.expose().to_owned() }
    }
}

/// A one-time sign-in link to the operator console, for a key scoped to one tenant: shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignInLinkDoc {
    /// The key the session will act as (revoking it ends the session).
    pub key_id: Uuid,
    /// The one tenant the session sees.
    pub tenant_id: Uuid,
    /// Whether the session may only read.
    pub read_only: bool,
    /// `/console/sign-in/<token>`: good for one sign-in; only its hash is stored.
    #[schema(example = "/console/sign-in/3q2-7wAAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo")]
    pub path: String,
    /// The whole link to send the customer: `DOORMAN_CONSOLE_URL` followed by `path`.
    #[schema(example = "https://admin.example/console/sign-in/3q2-7wAAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo")]
    pub url: String,
    /// After this it signs nobody in (15 minutes after it was made).
    pub expires_at: DateTime<Utc>,
}

impl From<&doorman_domain::usecases::operator::keys::SignInLink> for SignInLinkDoc {
    fn from(link: &doorman_domain::usecases::operator::keys::SignInLink) -> Self {
        Self {
            key_id: *link.key.id.as_uuid(),
            tenant_id: link.key.scope.tenant.map(|t| *t.as_uuid()).unwrap_or_default(),
            read_only: link.key.scope.read_only,
            path: link.path(),
            url: link.url.clone(),
            expires_at: link.expires_at,
        }
    }
}

/// The words documents carry, as `enum`s in the OpenAPI document: the documents hold them as
/// the text the domain writes (`as_str`), and a test holds each list to the domain's.
pub mod words {
    use serde::Serialize;
    use utoipa::ToSchema;

    /// What became of an event.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum EventStatus {
        Handled,
        Failed,
        InFlight,
        Stranded,
    }

    /// Who acted: an admin API key, or the command line.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum ActorKind {
        Key,
        Cli,
    }

    /// Where a replay job stands.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum JobState {
        Queued,
        Running,
        Finished,
    }

    /// A dispatch: the live one after the claim, or a replay.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum AttemptKind {
        Live,
        Replay,
    }

    /// How one event's replay ended (or, in a dry run, `would_replay`).
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum ReplayOutcome {
        WouldReplay,
        Handled,
        HandledUnrecorded,
        Failed,
        AlreadyHandled,
        NoPayload,
        InProgress,
        Unknown,
        NotSent,
    }

    /// How a dispatch ended: the live one as an event's status, a replay as its outcome, or
    /// `running` while it is.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum AttemptOutcome {
        Handled,
        Failed,
        InFlight,
        Stranded,
        Running,
        HandledUnrecorded,
        AlreadyHandled,
        NoPayload,
        InProgress,
        Unknown,
        NotSent,
    }

    /// A change the audit trail records.
    #[derive(Debug, Clone, Copy, Serialize, ToSchema)]
    pub enum AuditAction {
        #[serde(rename = "tenant.create")]
        TenantCreate,
        #[serde(rename = "tenant.rename")]
        TenantRename,
        #[serde(rename = "tenant.retain_payloads")]
        TenantRetainPayloads,
        #[serde(rename = "tenant.delete")]
        TenantDelete,
        #[serde(rename = "tenant.purge")]
        TenantPurge,
        #[serde(rename = "workspace.link")]
        WorkspaceLink,
        #[serde(rename = "workspace.unlink")]
        WorkspaceUnlink,
        #[serde(rename = "agent.set")]
        AgentSet,
        #[serde(rename = "agent.pause")]
        AgentPause,
        #[serde(rename = "agent.resume")]
        AgentResume,
        #[serde(rename = "agent.remove")]
        AgentRemove,
        #[serde(rename = "install_link.create")]
        InstallLinkCreate,
        #[serde(rename = "installation.remove")]
        InstallationRemove,
        #[serde(rename = "events.replay")]
        EventsReplay,
        #[serde(rename = "event.replay")]
        EventReplay,
        #[serde(rename = "key.create")]
        KeyCreate,
        #[serde(rename = "key.revoke")]
        KeyRevoke,
        #[serde(rename = "sign_in_link.create")]
        SignInLinkCreate,
        #[serde(rename = "secrets.rotate")]
        SecretsRotate,
        #[serde(rename = "receipts.prune")]
        ReceiptsPrune,
        #[serde(rename = "install_states.prune")]
        InstallStatesPrune,
        #[serde(rename = "console_sessions.prune")]
        ConsoleSessionsPrune,
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The words of a schema-only enum, as the document lists them.
        fn listed<T: ToSchema>() -> Vec<String> {
            let schema = serde_json::to_value(T::schema()).unwrap();
            let values = schema["enum"].as_array().cloned().unwrap_or_else(|| panic!("no enum: {schema}"));
            values.into_iter().map(|v| v.as_str().unwrap().to_owned()).collect()
        }

        #[test]
        fn each_listed_vocabulary_is_exactly_the_domains() {
            use doorman_domain::{AuditAction as Action, EventState, ReplayOutcome as Outcome};
            let strings = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
            assert_eq!(listed::<EventStatus>(), strings(&EventState::ALL.map(EventState::as_str)));
            assert_eq!(listed::<AuditAction>(), strings(&Action::ALL.map(Action::as_str)));
            let outcomes = [
                Outcome::WouldReplay,
                Outcome::Handled,
                Outcome::HandledUnrecorded,
                Outcome::Failed(String::new()),
                Outcome::AlreadyHandled,
                Outcome::NoPayload,
                Outcome::InProgress,
                Outcome::Unknown,
                Outcome::NotSent(String::new()),
            ];
            assert_eq!(listed::<ReplayOutcome>(), strings(&outcomes.each_ref().map(|o| o.as_str())));
            let states = [
                doorman_domain::JobState::Queued,
                doorman_domain::JobState::Running,
                doorman_domain::JobState::Finished,
            ];
            assert_eq!(listed::<JobState>(), strings(&states.map(doorman_domain::JobState::as_str)));
            let mut attempt: Vec<String> = strings(&EventState::ALL.map(EventState::as_str));
            attempt.push("running".into());
            for word in outcomes.iter().map(|o| o.as_str().to_owned()) {
                if !attempt.contains(&word) && word != "would_replay" {
                    attempt.push(word);
                }
            }
            assert_eq!(listed::<AttemptOutcome>(), attempt);
            assert_eq!(listed::<ActorKind>(), ["key", "cli"]);
            assert_eq!(listed::<AttemptKind>(), ["live", "replay"]);
        }
    }
}

//! The words documents carry, as `enum`s in the OpenAPI document: the documents hold them as
//! the text the domain writes (`as_str`), and a test holds each list to the domain's.

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

/// Who acted: an admin API key, the command line, or Doorman itself (an agent disabled after
/// failing for days).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    Key,
    Cli,
    Doorman,
}

/// Where a replay job stands.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Running,
    Finished,
}

/// A dispatch: the live one after the claim, one of the tenant's redeliveries, or a replay.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    Live,
    Redelivery,
    Replay,
}

/// Why a dispatch did not end in a 2xx (`doorman_domain::FailureKind`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    Status,
    Redirect,
    BodyTooLarge,
    Refused,
    Tls,
    Dns,
    Timeout,
    Interrupted,
    NotAllowed,
    NotAdmitted,
    Token,
    Internal,
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

/// Why an event's payload is not shown (`doorman_domain::PayloadHidden`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PayloadHidden {
    NotKept,
    NotAllowed,
    NotAllowedByTenant,
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
    #[serde(rename = "tenant.redelivery")]
    TenantRedelivery,
    #[serde(rename = "tenant.read_only_portals_read_payloads")]
    TenantReadOnlyPortalsReadPayloads,
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
    #[serde(rename = "agent.disable")]
    AgentDisable,
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
        assert_eq!(listed::<ActorKind>(), ["key", "cli", "doorman"]);
        assert_eq!(listed::<AttemptKind>(), ["live", "redelivery", "replay"]);
        let kinds = doorman_domain::FailureKind::ALL.map(doorman_domain::FailureKind::as_str);
        assert_eq!(listed::<FailureKind>(), strings(&kinds));
        let hidden = doorman_domain::PayloadHidden::ALL.map(doorman_domain::PayloadHidden::as_str);
        assert_eq!(listed::<PayloadHidden>(), strings(&hidden));
    }
}

//! The audit trail: one row for every change made through either face (admin API or CLI),
//! and for the one Doorman makes itself (an agent disabled after failing for days).
//!
//! An entry says when, who (a key's id and name, or `cli` and the OS user), what (an action
//! from a fixed vocabulary), on which tenant and target, and in which request. Never a secret:
//! targets are ids and names, never URLs' credentials, keys or tokens.

use chrono::{DateTime, Utc};

use super::{Actor, Caller, KeyId, TenantId, ValidationError};

/// What was changed. The stored word is [`AuditAction::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditAction {
    TenantCreate,
    TenantRename,
    TenantRetainPayloads,
    /// Redelivery turned on (its schedule, in the operator's words) or `off`.
    TenantRedelivery,
    /// Whether the tenant lets its read-only portal keys made with `read_payloads` read its
    /// payloads: `on` or `off`.
    TenantReadOnlyPortalsReadPayloads,
    TenantDelete,
    /// A deleted tenant's receipts deleted after it, in batches: a run recorded before
    /// (`started`) and after (how many, or why it stopped).
    TenantPurge,
    WorkspaceLink,
    WorkspaceUnlink,
    AgentSet,
    AgentPause,
    AgentResume,
    /// Doorman itself paused an agent whose every delivery had failed for the configured time
    /// (`DOORMAN_AGENT_DISABLE_AFTER`): since when it failed. An operator's resume undoes it.
    AgentDisable,
    AgentRemove,
    InstallLinkCreate,
    InstallationRemove,
    /// A replay job made: its id, what it selected, how many events.
    EventsReplay,
    /// One event of a replay job, and how its replay ended.
    EventReplay,
    KeyCreate,
    KeyRevoke,
    /// A one-time console sign-in link made for a key scoped to one tenant: the key's id.
    SignInLinkCreate,
    SecretsRotate,
    ReceiptsPrune,
    InstallStatesPrune,
    /// Ended or expired console sessions, and spent or expired sign-in links, deleted.
    ConsoleSessionsPrune,
}

impl AuditAction {
    /// Every action, for what must cover them all (a test reads each one back).
    pub const ALL: [Self; 25] = [
        Self::TenantCreate,
        Self::TenantRename,
        Self::TenantRetainPayloads,
        Self::TenantRedelivery,
        Self::TenantReadOnlyPortalsReadPayloads,
        Self::TenantDelete,
        Self::TenantPurge,
        Self::WorkspaceLink,
        Self::WorkspaceUnlink,
        Self::AgentSet,
        Self::AgentPause,
        Self::AgentResume,
        Self::AgentDisable,
        Self::AgentRemove,
        Self::InstallLinkCreate,
        Self::InstallationRemove,
        Self::EventsReplay,
        Self::EventReplay,
        Self::KeyCreate,
        Self::KeyRevoke,
        Self::SignInLinkCreate,
        Self::SecretsRotate,
        Self::ReceiptsPrune,
        Self::InstallStatesPrune,
        Self::ConsoleSessionsPrune,
    ];

    /// The action stored as `word`; any other word is refused (a filter naming an action that
    /// is never written would silently match nothing).
    pub fn parse(word: &str) -> Result<Self, ValidationError> {
        Self::ALL.into_iter().find(|action| action.as_str() == word).ok_or_else(|| {
            ValidationError::new("action", "must be one of the audit actions, like tenant.create")
        })
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TenantCreate => "tenant.create",
            Self::TenantRename => "tenant.rename",
            Self::TenantRetainPayloads => "tenant.retain_payloads",
            Self::TenantRedelivery => "tenant.redelivery",
            Self::TenantReadOnlyPortalsReadPayloads => "tenant.read_only_portals_read_payloads",
            Self::TenantDelete => "tenant.delete",
            Self::TenantPurge => "tenant.purge",
            Self::WorkspaceLink => "workspace.link",
            Self::WorkspaceUnlink => "workspace.unlink",
            Self::AgentSet => "agent.set",
            Self::AgentPause => "agent.pause",
            Self::AgentResume => "agent.resume",
            Self::AgentDisable => "agent.disable",
            Self::AgentRemove => "agent.remove",
            Self::InstallLinkCreate => "install_link.create",
            Self::InstallationRemove => "installation.remove",
            Self::EventsReplay => "events.replay",
            Self::EventReplay => "event.replay",
            Self::KeyCreate => "key.create",
            Self::KeyRevoke => "key.revoke",
            Self::SignInLinkCreate => "sign_in_link.create",
            Self::SecretsRotate => "secrets.rotate",
            Self::ReceiptsPrune => "receipts.prune",
            Self::InstallStatesPrune => "install_states.prune",
            Self::ConsoleSessionsPrune => "console_sessions.prune",
        }
    }
}

/// Which entries a listing selects besides their tenant: each field left out selects all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub action: Option<AuditAction>,
    /// Only entries made with this key (as their actor).
    pub key: Option<KeyId>,
    /// At or after this.
    pub since: Option<DateTime<Utc>>,
    /// Before this.
    pub until: Option<DateTime<Utc>>,
}

impl AuditFilter {
    /// Refuses `until` before `since`: a window that can hold nothing is a mistake, not an
    /// empty answer.
    pub fn check(&self) -> Result<(), ValidationError> {
        match (self.since, self.until) {
            (Some(since), Some(until)) if until < since => {
                Err(ValidationError::new("until", "must not be before since"))
            }
            _ => Ok(()),
        }
    }
}

/// One change, about to be written with it (in the same transaction, by the port that makes
/// the change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub caller: Caller,
    pub action: AuditAction,
    pub tenant: Option<TenantId>,
    /// What was changed, in words an operator can search for (a workspace id, an event id, a
    /// key id, `on`/`off`): never a secret.
    pub target: Option<String>,
}

impl AuditEntry {
    pub fn new(
        caller: &Caller,
        action: AuditAction,
        tenant: Option<TenantId>,
        target: Option<String>,
    ) -> Self {
        Self { caller: caller.clone(), action, tenant, target }
    }

    /// `key`, `cli`, or `doorman` (Doorman's own: an agent disabled).
    pub fn actor_kind(&self) -> &'static str {
        match &self.caller.actor {
            Actor::Key(_) => "key",
            Actor::Cli { .. } => "cli",
        }
    }

    /// The key's id, the OS user, or `doorman`.
    pub fn actor_id(&self) -> String {
        match &self.caller.actor {
            Actor::Key(key) => key.id.to_string(),
            Actor::Cli { user } => user.clone(),
        }
    }

    /// The key's name, `cli`, or `doorman`.
    pub fn actor_name(&self) -> String {
        match &self.caller.actor {
            Actor::Key(key) => key.name.clone(),
            Actor::Cli { .. } => "cli".to_owned(),
        }
    }
}

/// A stored audit row, as listings return it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// `key`, `cli`, or `doorman` (Doorman's own: an agent disabled).
    pub actor_kind: String,
    /// The key's id, the OS user, or `doorman`.
    pub actor_id: String,
    /// The key's name, `cli`, or `doorman`.
    pub actor_name: String,
    pub action: String,
    pub tenant: Option<TenantId>,
    pub target: Option<String>,
    pub request_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiKey, KeyId, KeyScope, RequestId};

    #[test]
    fn each_action_is_stored_as_its_documented_word() {
        use AuditAction::*;
        let words = [
            (TenantCreate, "tenant.create"),
            (TenantRename, "tenant.rename"),
            (TenantRetainPayloads, "tenant.retain_payloads"),
            (TenantRedelivery, "tenant.redelivery"),
            (TenantReadOnlyPortalsReadPayloads, "tenant.read_only_portals_read_payloads"),
            (TenantDelete, "tenant.delete"),
            (TenantPurge, "tenant.purge"),
            (WorkspaceLink, "workspace.link"),
            (WorkspaceUnlink, "workspace.unlink"),
            (AgentSet, "agent.set"),
            (AgentPause, "agent.pause"),
            (AgentResume, "agent.resume"),
            (AgentDisable, "agent.disable"),
            (AgentRemove, "agent.remove"),
            (InstallLinkCreate, "install_link.create"),
            (InstallationRemove, "installation.remove"),
            (EventsReplay, "events.replay"),
            (EventReplay, "event.replay"),
            (KeyCreate, "key.create"),
            (KeyRevoke, "key.revoke"),
            (SignInLinkCreate, "sign_in_link.create"),
            (SecretsRotate, "secrets.rotate"),
            (ReceiptsPrune, "receipts.prune"),
            (InstallStatesPrune, "install_states.prune"),
            (ConsoleSessionsPrune, "console_sessions.prune"),
        ];
        for (action, word) in words {
            assert_eq!(action.as_str(), word);
        }
        assert_eq!(
            AuditAction::ALL.map(AuditAction::as_str),
            words.map(|(_, word)| word),
            "ALL lists each once"
        );
    }

    /// A new action must be added to `ALL` (the match below fails to compile until it is
    /// handled here, and here is beside `ALL`).
    #[test]
    fn all_lists_every_action() {
        fn position(action: AuditAction) -> usize {
            use AuditAction::*;
            match action {
                TenantCreate => 0,
                TenantRename => 1,
                TenantRetainPayloads => 2,
                TenantRedelivery => 3,
                TenantReadOnlyPortalsReadPayloads => 4,
                TenantDelete => 5,
                TenantPurge => 6,
                WorkspaceLink => 7,
                WorkspaceUnlink => 8,
                AgentSet => 9,
                AgentPause => 10,
                AgentResume => 11,
                AgentDisable => 12,
                AgentRemove => 13,
                InstallLinkCreate => 14,
                InstallationRemove => 15,
                EventsReplay => 16,
                EventReplay => 17,
                KeyCreate => 18,
                KeyRevoke => 19,
                SignInLinkCreate => 20,
                SecretsRotate => 21,
                ReceiptsPrune => 22,
                InstallStatesPrune => 23,
                ConsoleSessionsPrune => 24,
            }
        }
        for (i, action) in AuditAction::ALL.into_iter().enumerate() {
            assert_eq!(position(action), i);
        }
    }

    #[test]
    fn each_action_is_parsed_from_its_word_and_nothing_else() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Ok(action));
        }
        for word in ["", "tenant", "TENANT.CREATE", "tenant.create ", "tenant.created"] {
            assert_eq!(AuditAction::parse(word).unwrap_err().what, "action", "{word:?}");
        }
    }

    #[test]
    fn a_filter_whose_until_is_before_its_since_is_refused() {
        let at = |s: i64| DateTime::from_timestamp(1_700_000_000 + s, 0);
        let window = |since, until| AuditFilter { since, until, ..AuditFilter::default() };
        assert_eq!(window(at(1), at(0)).check().unwrap_err().what, "until");
        assert_eq!(window(at(0), at(0)).check(), Ok(()), "an instant's window is allowed");
        assert_eq!(window(at(0), at(1)).check(), Ok(()));
        assert_eq!(window(None, at(0)).check(), Ok(()));
        assert_eq!(window(at(0), None).check(), Ok(()));
    }

    #[test]
    fn an_entry_names_its_actor_by_key_or_by_os_user() {
        let request = RequestId::new("req-1").unwrap();
        let key = ApiKey {
            id: KeyId::generate(),
            name: "backend".into(),
            scope: KeyScope { tenant: None, read_only: false, read_payloads: false },
        };
        let by_key = Caller { actor: Actor::Key(key.clone()), request: request.clone() };
        let entry = AuditEntry::new(&by_key, AuditAction::TenantCreate, None, None);
        assert_eq!(
            (entry.actor_kind(), entry.actor_id(), entry.actor_name()),
            ("key", key.id.to_string(), "backend".into())
        );
        let by_cli = Caller { actor: Actor::Cli { user: "ops".into() }, request };
        let entry = AuditEntry::new(&by_cli, AuditAction::TenantCreate, None, None);
        assert_eq!(
            (entry.actor_kind(), entry.actor_id(), entry.actor_name()),
            ("cli", "ops".into(), "cli".into())
        );
    }
}

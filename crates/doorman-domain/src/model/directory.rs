//! The directory as operators see it: tenants, their workspace links, their agent and their
//! installations, and the answers operator actions give about them.

use chrono::{DateTime, Utc};

use super::ValidationError;
use super::text::check_printable_ascii;
use super::{AgentUrl, Platform, RedeliverySchedule, TenantId, TenantName, WorkspaceRef};

/// A tenant, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRecord {
    pub id: TenantId,
    pub name: String,
    pub created_at: DateTime<Utc>,
    /// Keeps its claimed events' payloads for replay (`tenant retain-payloads`).
    pub retain_payloads: bool,
    /// Sends its events that were not handled again on this schedule (`tenant redelivery`);
    /// `None`: off, the default.
    pub redelivery: Option<RedeliverySchedule>,
    /// Lets its read-only portal keys made with `read_payloads` read its kept payloads
    /// (`tenant read-only-portals-read-payloads`; off by default): the tenant's say in
    /// [`crate::KeyScope::payload_access`]. Every other key's permission is its own.
    pub read_only_portals_read_payloads: bool,
}

/// Which tenants a listing looks for. The text follows a name's rules ([`TenantName`]) and is
/// matched as text (no wildcards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantSearch {
    /// Tenants whose name contains it, ignoring case.
    Name(TenantName),
    /// What support has at hand: part of the name (ignoring case), the start of the id, or
    /// a Slack team or enterprise id of one of the tenant's workspaces.
    Anything(TenantName),
}

impl TenantSearch {
    /// The text searched for.
    pub fn text(&self) -> &str {
        match self {
            Self::Name(text) | Self::Anything(text) => text.as_str(),
        }
    }
}

/// A tenant about to be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTenant {
    pub id: TenantId,
    pub name: TenantName,
}

/// A client's key for making one creation safe to repeat (HTTP `Idempotency-Key`): printable
/// ASCII, 1 to 255 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn new(key: impl Into<String>) -> Result<Self, ValidationError> {
        let key = key.into();
        check_printable_ascii("Idempotency-Key", &key)?;
        Ok(Self(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An idempotent creation: whose key it is, the key, and what the request asked for (a
/// repeat must ask for the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotency {
    /// [`Actor::idempotency_scope`](super::Actor::idempotency_scope): keys never collide
    /// across callers.
    pub scope: String,
    pub key: IdempotencyKey,
    /// The request's content in canonical form.
    pub fingerprint: String,
}

/// What creating a tenant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new tenant.
    New(TenantRecord),
    /// The same request under the same idempotency key was answered before: its tenant,
    /// nothing created.
    Repeated(TenantRecord),
    /// The idempotency key was used before for a different request: nothing created.
    KeyReused,
    /// A request under the same idempotency key is still being processed: nothing created
    /// (its answer will be there to repeat once it has finished).
    InProgress,
}

/// A workspace linked to a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedWorkspace {
    pub platform: Platform,
    pub workspace: WorkspaceRef,
    pub linked_at: DateTime<Utc>,
}

/// What linking a workspace did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Linked {
    /// Linked now.
    New(LinkedWorkspace),
    /// The tenant already had it: nothing changed.
    Already(LinkedWorkspace),
    /// Another tenant has it: nothing changed.
    Taken,
}

/// What removing a workspace's link (and its installation) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Removed {
    pub link: bool,
    pub installation: bool,
}

/// A tenant's agent as operators see it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    pub url: AgentUrl,
    pub paused: bool,
    /// Since when every delivery to it has failed (its circuit opened and has not closed).
    pub failing_since: Option<DateTime<Utc>>,
    /// When Doorman paused it for failing longer than `DOORMAN_AGENT_DISABLE_AFTER`; a resume
    /// clears it.
    pub disabled_at: Option<DateTime<Utc>>,
}

/// An installation as operators list it: never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationSummary {
    pub tenant: TenantId,
    pub workspace: WorkspaceRef,
    pub app_id: String,
    pub bot_user_id: String,
    pub scopes: String,
    /// False once Slack revoked the bot token.
    pub has_bot_token: bool,
    pub token_expires_at: Option<DateTime<Utc>>,
    pub installed_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An install link to hand a customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallLink {
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

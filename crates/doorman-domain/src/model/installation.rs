//! Slack app installations: what an install grants, and what an agent is handed to answer in
//! the workspace.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::ValidationError;
use super::text::check_printable_ascii;
use super::{WorkspaceId, WorkspaceRef};

/// A token Slack issued (a bot token `xoxb-…`, a refresh token `xoxe-…`). Never printed:
/// `Debug` shows a placeholder. Read it with [`SlackToken::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct SlackToken(String);

impl SlackToken {
    /// Printable ASCII, 1 to 255 bytes.
    pub fn new(token: impl Into<String>) -> Result<Self, ValidationError> {
        let token = token.into();
        check_printable_ascii("Slack token", &token)?;
        Ok(Self(token))
    }

    /// The token itself, for the places that seal it, send it to Slack or hand it to an agent.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SlackToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SlackToken(<redacted>)")
    }
}

/// A workspace's installation, as the directory found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// The team installed into (none for an org-wide install).
    pub team_id: Option<WorkspaceId>,
    /// The enterprise, for a team in a grid or an org-wide install.
    pub enterprise_id: Option<WorkspaceId>,
    pub bot_user_id: String,
    /// `None` once Slack revoked it (`tokens_revoked`).
    pub bot_token: Option<SlackToken>,
    /// Bot scopes, comma-separated as Slack lists them.
    pub scopes: String,
    /// With token rotation: when the bot token expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// With token rotation: a refresh token is stored.
    pub refreshable: bool,
}

impl Installation {
    /// A token with less than this left is refreshed before it is handed to an agent.
    pub const REFRESH_AHEAD: Duration = Duration::from_secs(5 * 60);

    /// What a dispatch at `now` must do before it carries the bot token.
    pub fn freshness(&self, now: DateTime<Utc>) -> Freshness {
        let ahead = chrono::Duration::from_std(Self::REFRESH_AHEAD).unwrap_or_default();
        match (&self.bot_token, self.expires_at) {
            // No token (revoked) or one that never expires: nothing to refresh.
            (None, _) | (Some(_), None) => Freshness::Fresh,
            (Some(_), Some(at)) if at - now >= ahead => Freshness::Fresh,
            (Some(_), Some(_)) if self.refreshable => Freshness::Refresh,
            // Rotating but its refresh token is gone: used until it expires, never after.
            (Some(_), Some(at)) if at > now => Freshness::Fresh,
            (Some(_), Some(_)) => Freshness::Expired,
        }
    }
}

/// Whether a bot token can be handed to an agent as it is ([`Installation::freshness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Carry it as it is.
    Fresh,
    /// Refresh it first (rotating, less than [`Installation::REFRESH_AHEAD`] left).
    Refresh,
    /// Expired with nothing to refresh it with: it must not be sent.
    Expired,
}

/// What Slack's `oauth.v2.access` granted on an install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The workspace installed into: a team, or an enterprise for an org-wide install.
    pub workspace: WorkspaceRef,
    /// Its name, as Slack gave it (for the page the installer sees).
    pub workspace_name: String,
    pub app_id: String,
    pub bot_user_id: String,
    pub bot_token: SlackToken,
    pub scopes: String,
    /// With token rotation.
    pub refresh_token: Option<SlackToken>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A lifecycle event of the app in a workspace, applied after it has been dispatched (the
/// agent may want to clean up first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// `app_uninstalled`: the installation and the workspace's link go.
    Uninstalled,
    /// `tokens_revoked`: the bot tokens of these bot users are no longer valid.
    TokensRevoked { bot_user_ids: Vec<String> },
}

// --- the install flow's states ---------------------------------------------------------------

/// What an install link is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Active(super::TenantId),
    Expired,
    Unknown,
}

/// A state and the browser secret it is bound to, both to be handed to the browser: the state
/// in Slack's URL, the browser secret in an HttpOnly cookie.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenedState {
    pub state: String,
    pub browser: String,
}

impl std::fmt::Debug for OpenedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenedState(<redacted>)")
    }
}

/// Why a state was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateRefusal {
    /// The callback carried no state, or the browser no cookie.
    Missing,
    Unknown,
    Expired,
    Used,
    /// The state was started in another browser.
    OtherBrowser,
}

/// The outcome of taking (consuming) a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakenState {
    Taken { tenant: super::TenantId, tenant_name: String },
    Refused(StateRefusal),
}

/// What recording an installation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Installed,
    /// The same tenant installed again: new token, new scopes.
    Updated,
    /// The workspace belongs to another tenant: nothing changed.
    Taken,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_never_prints() {
        let token = SlackToken::new("xoxb-1234-secret").unwrap();
        assert_eq!(format!("{token:?}"), "SlackToken(<redacted>)");
        let opened = OpenedState { state: "st4te".into(), browser: "br0wser".into() };
        assert_eq!(format!("{opened:?}"), "OpenedState(<redacted>)");
        assert!(SlackToken::new("").is_err());
    }

    #[test]
    fn a_rotating_token_close_to_expiry_is_refreshed_and_an_expired_one_never_sent() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let installation = |expires_in: Option<i64>, refreshable| Installation {
            team_id: None,
            enterprise_id: Some(WorkspaceId::new("E1").unwrap()),
            bot_user_id: "U1".into(),
            bot_token: Some(SlackToken::new("xoxb-1").unwrap()),
            scopes: "chat:write".into(),
            expires_at: expires_in.map(|s| now + chrono::Duration::seconds(s)),
            refreshable,
        };
        assert_eq!(installation(Some(299), true).freshness(now), Freshness::Refresh);
        assert_eq!(installation(Some(-10), true).freshness(now), Freshness::Refresh);
        assert_eq!(installation(Some(301), true).freshness(now), Freshness::Fresh);
        assert_eq!(installation(None, false).freshness(now), Freshness::Fresh);
        assert_eq!(installation(Some(10), false).freshness(now), Freshness::Fresh, "used until it expires");
        assert_eq!(installation(Some(0), false).freshness(now), Freshness::Expired, "never after");
        let revoked = Installation { bot_token: None, ..installation(Some(0), false) };
        assert_eq!(revoked.freshness(now), Freshness::Fresh, "nothing to carry, nothing to refresh");
    }
}

//! The error policy, written once.
//!
//! - Each port has its own typed error, small enough to match on: [`StorageError`] for the
//!   storage ports (same backing store, same failure modes) and [`DispatchError`] for the
//!   agent bridge. Constructors return [`ValidationError`]. Operator use cases return
//!   [`OperatorError`], worded for any front end: the CLI adds its own hints (which command
//!   to run next), the admin API its problem types and status codes.
//! - Adapters translate their library's errors into these variants at the boundary (a pool
//!   timeout becomes `StorageError::Unavailable`); the domain never sees diesel or HTTP
//!   errors.
//! - The app crate maps outcomes to HTTP in one place. Messages here are for operators'
//!   logs; they never carry a secret, and clients never see them.

use chrono::{DateTime, Utc};
use thiserror::Error;

use crate::model::{AttemptRecord, FailureKind};

// The model's constructors' error lives beside them (the model depends on nothing above it);
// it is part of this policy all the same.
pub use crate::model::ValidationError;

/// The tenant directory or the receipt store could not answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StorageError {
    /// The store is unreachable or overloaded (connection refused, pool timeout). Worth
    /// retrying later: the inbound path answers 503 so the platform does.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The store answered, but not as the adapter expected (a constraint it did not
    /// anticipate, a row it could not read). A bug or a schema drift, not load.
    #[error("storage error: {0}")]
    Unexpected(String),
    /// A write was sent but its commit was never confirmed: the connection died under it (a
    /// primary lost mid-commit) or it took longer than allowed. It may or may not have been
    /// made; only a look at the store, later, can say.
    #[error("storage did not confirm the write: {0}")]
    Unconfirmed(String),
}

/// Slack's OAuth endpoint did not grant what was asked.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OAuthError {
    /// Slack answered `"ok": false` with this error code (`invalid_code`, `bad_redirect_uri`, …).
    #[error("Slack refused: {0}")]
    Refused(String),
    /// Slack could not be reached, or answered something that is not its API.
    #[error("Slack could not be reached: {0}")]
    Unreachable(String),
}

/// A rotating bot token could not be refreshed: Slack's answer, Doorman's own storage, or a
/// Slack app this process was not given. Kept apart because each needs a different person:
/// the customer (reinstall), the operator's database, the operator's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RefreshError {
    #[error(transparent)]
    Slack(#[from] OAuthError),
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// No Slack app (client id and secret) is configured, so no token can be refreshed.
    #[error("the Slack app is not configured (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET)")]
    NotConfigured,
}

/// An operator action could not be done. Worded for any caller (API or CLI); never names a
/// CLI flag or a JSON field: each face says which of its inputs a refusal is about.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OperatorError {
    /// No such tenant, or one the caller may not see (answered alike, so a scoped key cannot
    /// learn which tenants exist).
    #[error("no tenant with id {0}")]
    UnknownTenant(crate::model::TenantId),
    /// No such thing of the tenant's: `what` is `event`, `workspace`, `installation` or `key`.
    #[error("no {what} {id}")]
    NotFound { what: &'static str, id: String },
    /// The caller may not do this (a read-only key changing something, a scoped key creating
    /// tenants or managing keys). Nothing was written.
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    #[error("tenant {0} has no agent configured")]
    NoAgent(crate::model::TenantId),
    /// The workspace is linked to another tenant, or linking it would take deliveries another
    /// tenant's link receives (decision 20).
    #[error("that workspace is already linked to another tenant, or its enterprise (or a team inside it) is")]
    WorkspaceTaken,
    /// The tenant has the team linked, but otherwise (inside another enterprise, or none):
    /// relinking does not move it. Nothing was written.
    #[error("the tenant has that team linked as {0}: unlink it before linking it otherwise")]
    LinkedOtherwise(String),
    /// The idempotency key was used before for a different request.
    #[error("this Idempotency-Key was used for a different request")]
    IdempotencyKeyReused,
    /// A request under the same idempotency key is still being processed; the same request
    /// again, once it has finished, gets its answer.
    #[error("a request with this Idempotency-Key is still being processed")]
    IdempotencyKeyInUse,
    /// Install links need the Slack app's settings (client id and secret, public URL).
    #[error("installs are off: the Slack app's client id, secret and public URL are not configured")]
    InstallsOff,
    /// Sign-in links need where browsers reach the console.
    #[error("sign-in links are off: where browsers reach the operator console is not configured")]
    SignInLinksOff,
    /// A value that is well-formed but not allowed (an agent on a private address).
    #[error("{what} refused: {reason}")]
    Refused { what: &'static str, reason: String },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A dispatch to an agent did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DispatchError {
    /// The request provably never reached the agent (connection refused, DNS or TLS failure
    /// before sending), even after the bridge's own short retries.
    #[error("agent unreachable: {reason}")]
    Unreachable { kind: FailureKind, reason: String },
    /// The agent answered with a non-success status; `answer` is the first KiB of its body, as
    /// text (kept with the attempt, never in the one-line reason).
    #[error("agent answered HTTP {status}")]
    Rejected { status: u16, answer: Option<String> },
    /// No answer within the dispatch timeout; the agent may or may not have the event.
    #[error("agent did not answer within {0} s")]
    TimedOut(u64),
    /// The request may have reached the agent but the exchange broke (reset mid-response).
    #[error("dispatch interrupted: {0}")]
    Interrupted(String),
    /// The agent's destination is not allowed (not https, or not a public address after
    /// DNS); nothing was sent.
    #[error("destination_not_allowed: {0}")]
    DestinationNotAllowed(String),
    /// The installation's bot token had to be refreshed and Slack did not refresh it; nothing
    /// was sent.
    #[error("token_refresh_failed: {0}")]
    TokenRefreshFailed(String),
    /// The bot token had to be refreshed and Doorman's own storage failed (the installation
    /// could not be read, leased or written); nothing was sent, and Slack was not asked or its
    /// fresh token could not be kept. An operator's replay sends it once the database is back.
    #[error("token_storage_failed: {0}")]
    TokenStorageFailed(String),
    /// A claim that was settled after its answer found the agent unable to take it (its bound
    /// full, or its circuit open); nothing was sent, and the failure is on the receipt for an
    /// operator's replay.
    #[error("not_admitted: {0}")]
    NotAdmitted(String),
    /// The dispatch could not be built (a bug: the payload was checked when it arrived).
    #[error("dispatch could not be built: {0}")]
    Internal(String),
}

impl DispatchError {
    /// Why the dispatch did not end in a 2xx, as an attempt's record says it.
    pub fn kind(&self) -> FailureKind {
        match self {
            Self::Rejected { status, .. } => match status {
                300..=399 => FailureKind::Redirect,
                413 => FailureKind::BodyTooLarge,
                _ => FailureKind::Status,
            },
            Self::Unreachable { kind, .. } => *kind,
            Self::TimedOut(_) => FailureKind::Timeout,
            Self::Interrupted(_) => FailureKind::Interrupted,
            Self::DestinationNotAllowed(_) => FailureKind::NotAllowed,
            Self::NotAdmitted(_) => FailureKind::NotAdmitted,
            Self::TokenRefreshFailed(_) | Self::TokenStorageFailed(_) => FailureKind::Token,
            Self::Internal(_) => FailureKind::Internal,
        }
    }

    /// The attempt this failure ended, started at `started_at` and ended at `ended_at`.
    pub fn attempt(&self, started_at: DateTime<Utc>, ended_at: DateTime<Utc>, replay: bool) -> AttemptRecord {
        let (status, answer) = match self {
            Self::Rejected { status, answer } => (Some(*status), answer.clone()),
            _ => (None, None),
        };
        AttemptRecord {
            started_at,
            ended_at,
            replay,
            status,
            failure: Some(self.kind()),
            reason: Some(self.to_string()),
            answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_sentences_for_operators() {
        assert_eq!(ValidationError::new("event id", "is empty").to_string(), "event id is empty");
        assert_eq!(
            DispatchError::Rejected { status: 502, answer: Some("down".into()) }.to_string(),
            "agent answered HTTP 502"
        );
    }

    #[test]
    fn statuses_say_what_kind_of_failure_they_are() {
        let rejected = |status| DispatchError::Rejected { status, answer: None };
        assert_eq!(rejected(500).kind(), FailureKind::Status);
        assert_eq!(rejected(302).kind(), FailureKind::Redirect);
        assert_eq!(rejected(413).kind(), FailureKind::BodyTooLarge);
        assert_eq!(DispatchError::TimedOut(60).kind(), FailureKind::Timeout);
        let unreachable = DispatchError::Unreachable { kind: FailureKind::Tls, reason: "handshake".into() };
        assert_eq!(unreachable.kind(), FailureKind::Tls);
    }

    #[test]
    fn an_attempt_keeps_the_status_and_answer_of_a_rejection() {
        let t0 = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let t1 = t0 + chrono::Duration::milliseconds(1_234);
        let error = DispatchError::Rejected { status: 503, answer: Some("busy".into()) };
        let attempt = error.attempt(t0, t1, false);
        assert_eq!(attempt.status, Some(503));
        assert_eq!(attempt.answer.as_deref(), Some("busy"));
        assert_eq!(attempt.failure, Some(FailureKind::Status));
        assert_eq!(attempt.reason.as_deref(), Some("agent answered HTTP 503"));
        assert_eq!(attempt.latency_ms(), 1_234);
    }
}

//! Inbound events: what arrived, for which workspace, on which delivery attempt.

use std::fmt;
use std::sync::Arc;

use super::ValidationError;
use super::text::{check_label, check_printable_ascii};
use super::{Platform, WorkspaceRef};

/// The platform's own number for an event (Slack's `event_id`, e.g. `Ev0PV52K25`).
///
/// Non-empty, at most 255 bytes, printable ASCII, not `.` or `..`. Only numbered events are retried by the
/// platform, so only they are claimed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExternalEventId(String);

impl ExternalEventId {
    pub fn new(id: impl Into<String>) -> Result<Self, ValidationError> {
        let id = id.into();
        check_printable_ascii("event id", &id)?;
        // Every stored event opens at a URL with its id as one path segment (the console, the
        // admin API); `.` and `..` are path steps there even percent-encoded, and no platform
        // numbers an event so.
        if id == "." || id == ".." {
            return Err(ValidationError::new("event id", "is a path step (`.` or `..`)"));
        }
        Ok(Self(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExternalEventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A short name from the platform: an event type (`app_mention`), a command (`/weather`)
/// or an interaction type (`block_actions`). Non-empty, at most 255 bytes, no controls.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Label(String);

impl Label {
    pub fn new(what: &'static str, value: impl Into<String>) -> Result<Self, ValidationError> {
        let value = value.into();
        check_label(what, &value)?;
        Ok(Self(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An Events API event type as events are listed by it: Slack's are lower-case words joined by
/// `_`, some by `.` (`app_mention`, `message`, `message.channels`), at most 255 bytes. A
/// filter that cannot name any event Slack sends is refused rather than answered with nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventType(String);

impl EventType {
    /// What [`EventType::new`] takes, as a regular expression (ECMA-262, for the OpenAPI
    /// document), besides the length.
    pub const PATTERN: &'static str = "^[a-z0-9]+([_.][a-z0-9]+)*$";

    pub fn new(value: impl Into<String>) -> Result<Self, ValidationError> {
        let value = value.into();
        let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if value.len() > super::text::MAX_LEN || !value.split(['_', '.']).all(word) {
            return Err(ValidationError::new(
                "event type",
                "must be lower-case words joined by `_` or `.`, like app_mention (at most 255 characters)",
            ));
        }
        Ok(Self(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What kind of delivery this is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// An Events API callback, with the inner event's type.
    Callback { event_type: Label },
    /// A slash command, with the command (`/weather`).
    Command { command: Label },
    /// An interaction (button, shortcut, modal), with its type.
    Interaction { interaction_type: Label },
}

impl EventKind {
    /// The stable name of the kind, as sent to agents.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Callback { .. } => "event_callback",
            EventKind::Command { .. } => "slash_command",
            EventKind::Interaction { .. } => "interaction",
        }
    }

    /// The kind's own label: the event type, the command or the interaction type.
    pub fn label(&self) -> &Label {
        match self {
            EventKind::Callback { event_type } => event_type,
            EventKind::Command { command } => command,
            EventKind::Interaction { interaction_type } => interaction_type,
        }
    }
}

/// Why the platform says it is re-sending. A hint from an unsigned header: it is logged
/// and counted, never used to decide anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryReason {
    HttpTimeout,
    TooManyRedirects,
    ConnectionFailed,
    SslError,
    HttpError,
    UnknownError,
    /// Present but not one of the documented reasons.
    Other,
}

impl RetryReason {
    pub const ALL: [RetryReason; 7] = [
        RetryReason::HttpTimeout,
        RetryReason::TooManyRedirects,
        RetryReason::ConnectionFailed,
        RetryReason::SslError,
        RetryReason::HttpError,
        RetryReason::UnknownError,
        RetryReason::Other,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            RetryReason::HttpTimeout => "http_timeout",
            RetryReason::TooManyRedirects => "too_many_redirects",
            RetryReason::ConnectionFailed => "connection_failed",
            RetryReason::SslError => "ssl_error",
            RetryReason::HttpError => "http_error",
            RetryReason::UnknownError => "unknown_error",
            RetryReason::Other => "other",
        }
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which attempt at delivering an event this request is, as the platform says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delivery {
    /// 0 for the first delivery, 1..=3 for Slack's retries.
    pub attempt: u32,
    pub retry_reason: Option<RetryReason>,
    /// An operator replayed it (`doorman receipts replay`); the attempt is the one that was
    /// claimed originally.
    pub replay: bool,
    /// Which of the tenant's redeliveries this is (ADR 26): 0 for the live delivery and an
    /// operator's replay, 1 for the first redelivery, and so on.
    pub redelivery: u32,
}

/// The platform's payload, as JSON text, forwarded to the agent untouched. The domain
/// never looks inside; cloning is cheap because events are handed to a background task.
#[derive(Clone, PartialEq, Eq)]
pub struct Payload(Arc<str>);

impl Payload {
    /// Wraps JSON text the adapter has already checked is JSON.
    pub fn from_json_text(json: impl Into<Arc<str>>) -> Self {
        Self(json.into())
    }

    pub fn as_json_text(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Payload {
    // A payload is customer content; debug output shows its size, not its words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Payload({} bytes)", self.0.len())
    }
}

/// What identifies one signed request, for telling a replay from a first arrival: the
/// signature the platform put on it (its hex text), and when that signature stops being
/// accepted anyway (its timestamp plus the signature window), after which it need not be
/// remembered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    signature: String,
    expires_at: chrono::DateTime<chrono::Utc>,
}

impl Fingerprint {
    /// `signature`: printable ASCII, at most 255 bytes (Slack's is `v0=` and 64 hex digits).
    pub fn new(
        signature: impl Into<String>,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Self, ValidationError> {
        let signature = signature.into();
        check_printable_ascii("request signature", &signature)?;
        Ok(Self { signature, expires_at })
    }

    pub fn signature(&self) -> &str {
        &self.signature
    }

    pub fn expires_at(&self) -> chrono::DateTime<chrono::Utc> {
        self.expires_at
    }
}

/// One inbound delivery, converted at the edge into domain terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundEvent {
    pub platform: Platform,
    pub workspace: WorkspaceRef,
    pub kind: EventKind,
    /// Present when the platform numbers (and so retries) this event; absent for slash
    /// commands and interactions, which arrive once.
    pub external_id: Option<ExternalEventId>,
    pub delivery: Delivery,
    pub payload: Payload,
    /// For an unnumbered event, the signed request's fingerprint: recorded when the event is
    /// accepted, so a replay of the same request is refused (numbered events are protected
    /// by their claim instead).
    pub fingerprint: Option<Fingerprint>,
    /// For the app's own lifecycle events (uninstalled, tokens revoked): what to apply once
    /// the event has been dispatched.
    pub lifecycle: Option<super::Lifecycle>,
}

#[cfg(test)]
mod event_type_tests {
    use super::EventType;

    #[test]
    fn an_event_type_is_lower_case_words_joined_by_underscores_or_dots() {
        for good in ["app_mention", "message", "message.channels", "app_home_opened", "a1"] {
            assert_eq!(EventType::new(good).map(|t| t.as_str().to_owned()), Ok(good.to_owned()));
        }
        for bad in ["", "bad type!", "App_mention", "_x", "x_", "x..y", "x y", "é", &"a".repeat(256)] {
            assert!(EventType::new(bad).is_err(), "{bad:?}");
        }
    }

    fn allowed() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        let inner = EventType::PATTERN.trim_start_matches('^').trim_end_matches('$');
        proptest::string::string_regex(inner).unwrap().prop_filter("at most 255", |t| t.len() <= 255)
    }

    proptest::proptest! {
        /// What the OpenAPI document's pattern allows (within 255 characters), the filter takes.
        #[test]
        fn every_type_the_pattern_allows_is_taken(t in allowed()) {
            proptest::prop_assert!(EventType::new(t).is_ok());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_bounded_printable_ascii() {
        assert!(ExternalEventId::new("Ev0PV52K25").is_ok());
        assert!(ExternalEventId::new("").is_err());
        assert!(ExternalEventId::new("E".repeat(256)).is_err());
        assert!(ExternalEventId::new("Év1").is_err());
        assert!(ExternalEventId::new("Ev\n1").is_err());
        assert!(ExternalEventId::new(".").is_err());
        assert!(ExternalEventId::new("..").is_err());
        assert!(ExternalEventId::new("...").is_ok());
    }

    #[test]
    fn a_payload_does_not_print_its_content() {
        let p = Payload::from_json_text(r#"{"text":"private words"}"#);
        assert_eq!(format!("{p:?}"), "Payload(24 bytes)");
        assert_eq!(p.as_json_text(), r#"{"text":"private words"}"#, "forwarded untouched");
    }

    #[test]
    fn each_retry_reason_is_slacks_own_word() {
        let words: Vec<String> = RetryReason::ALL.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "http_timeout",
                "too_many_redirects",
                "connection_failed",
                "ssl_error",
                "http_error",
                "unknown_error",
                "other"
            ]
        );
    }

    #[test]
    fn each_kind_exposes_its_label() {
        let kind = EventKind::Command { command: Label::new("command", "/weather").unwrap() };
        assert_eq!(kind.name(), "slash_command");
        assert_eq!(kind.label().as_str(), "/weather");
        assert_eq!(kind.label().to_string(), "/weather");
    }
}

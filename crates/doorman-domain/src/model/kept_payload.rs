//! An event's kept payload as an operator may see it: what a customer wrote in Slack, so it is
//! shown only to a caller allowed to read payloads, and otherwise says why it is not.

use std::fmt;

/// A kept payload, opened: the JSON text the platform sent, with the platform's own secrets
/// redacted by the adapter that opened it. Customer content: its `Debug` never prints it, so a
/// log line cannot carry it.
#[derive(Clone, PartialEq, Eq)]
pub struct KeptPayload(String);

impl KeptPayload {
    pub fn new(json: String) -> Self {
        Self(json)
    }

    /// The JSON text, for the one place that shows it to a caller allowed to read it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KeptPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeptPayload(<{} bytes>)", self.0.len())
    }
}

/// Why an event's payload is not shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadHidden {
    /// The tenant keeps none for it: it keeps payloads neither for replay nor for
    /// redelivery, or the event was handled (its payload went with it).
    NotKept,
    /// The caller may not read payloads ([`crate::KeyScope::payload_access`]).
    NotAllowed,
    /// The caller is a read-only portal key made with `read_payloads`, and its tenant has not
    /// allowed its read-only portals to read payloads ([`crate::KeyScope::payload_access`]).
    NotAllowedByTenant,
}

impl PayloadHidden {
    pub const ALL: [Self; 3] = [Self::NotKept, Self::NotAllowed, Self::NotAllowedByTenant];

    /// The word documents carry.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotKept => "not_kept",
            Self::NotAllowed => "not_allowed",
            Self::NotAllowedByTenant => "not_allowed_by_tenant",
        }
    }
}

/// An event's payload for one caller: shown, or hidden and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadView {
    Shown(KeptPayload),
    Hidden(PayloadHidden),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_payload_never_prints_its_content() {
        let payload = KeptPayload::new(r#"{"event":{"text":"my salary is 10"}}"#.into());
        assert_eq!(format!("{payload:?}"), "KeptPayload(<36 bytes>)");
        assert!(!format!("{:?}", PayloadView::Shown(payload.clone())).contains("salary"));
        assert!(payload.expose().contains("salary"));
    }
}

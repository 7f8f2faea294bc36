//! What a dispatch's request is, said once: its method and its headers, in the order they are
//! written. The client writes the framing headers ([`framing`]) before a message's signed ones
//! ([`signed`]); the operator's event page and document show the same list for an event
//! ([`shown`]), with the signature redacted. One list for both, so what operators read cannot
//! drift from what agents receive.
//!
//! No header carries a token: an installation's bot token travels in the document's
//! `authorization` (`super::document`), never in a header; the signature is the only secret
//! value, and it is never computed for the page.

use doorman_domain::{AgentUrl, ExternalEventId};

/// Every dispatch is one POST.
pub const METHOD: &str = "POST";

/// Who sends it: Doorman and its version.
pub const USER_AGENT: &str = concat!("doorman/", env!("CARGO_PKG_VERSION"));

/// Every body is a JSON document (the dispatch document, or the operational webhook's).
pub const CONTENT_TYPE: &str = "application/json";

/// The header whose value is the only secret a request carries: an HMAC keyed with the
/// tenant's signing secret, which would let whoever reads it replay that very request.
pub const SIGNATURE: &str = "webhook-signature";

/// The signature's value as shown: its scheme, the rest withheld.
pub const REDACTED_SIGNATURE: &str = "v1,… (redacted)";

/// `content-length` as shown: the document is rendered for each dispatch (the bot token it
/// carries, the delivery's counters), so its length is the one of that request.
const SHOWN_LENGTH: &str = "(the document's length in bytes)";

/// `webhook-timestamp` as shown: each attempt is signed afresh.
const SHOWN_TIMESTAMP: &str = "(Unix seconds when each attempt is signed)";

/// The headers the client writes first, for any body: the host it asks, who asks, and the
/// body's type and length.
pub(crate) fn framing<'a>(host: &'a str, content_length: &'a str) -> [(&'static str, &'a str); 4] {
    [
        ("host", host),
        ("user-agent", USER_AGENT),
        ("content-type", CONTENT_TYPE),
        ("content-length", content_length),
    ]
}

/// A message's Standard Webhooks headers: its id, when it was signed, and the signature.
pub(crate) fn signed<'a>(
    id: &'a str,
    timestamp: &'a str,
    signature: &'a str,
) -> [(&'static str, &'a str); 3] {
    [("webhook-id", id), ("webhook-timestamp", timestamp), (SIGNATURE, signature)]
}

/// `webhook-id` of a numbered event: the same for every dispatch of it (live, redelivered or
/// replayed), so an agent can deduplicate on it, as Standard Webhooks intends.
pub fn webhook_id(event: &ExternalEventId) -> String {
    format!("evt_{event}")
}

/// The `host` header for `url`: its host, and its port unless it is the scheme's own.
pub(crate) fn host_header(host: &str, port: u16, tls: bool) -> String {
    let default_port = if tls { 443 } else { 80 };
    if port == default_port { host.to_owned() } else { format!("{host}:{port}") }
}

/// One header as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownHeader {
    pub name: &'static str,
    /// As sent; in parentheses, what a value set per request is; the signature redacted.
    pub value: String,
    /// Whether the value is withheld ([`REDACTED_SIGNATURE`]).
    pub redacted: bool,
}

/// The request a dispatch of `event` to `url` is: what the client writes, header by header,
/// in order, with the signature redacted and the values set per request described. Never
/// signs anything: no secret is at hand here to leak.
pub fn shown(url: &AgentUrl, event: &ExternalEventId) -> Vec<ShownHeader> {
    let url = url.as_url();
    let tls = url.scheme() == "https";
    let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
    let host = host_header(url.host_str().unwrap_or_default(), port, tls);
    let id = webhook_id(event);
    framing(&host, SHOWN_LENGTH)
        .into_iter()
        .chain(signed(&id, SHOWN_TIMESTAMP, REDACTED_SIGNATURE))
        .map(|(name, value)| ShownHeader { name, value: value.to_owned(), redacted: name == SIGNATURE })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_request_is_shown_header_by_header_with_its_signature_redacted() {
        let url = AgentUrl::parse("https://agent.example:8443/slack?tenant=acme").unwrap();
        let shown = shown(&url, &ExternalEventId::new("Ev0PV52K25").unwrap());
        let pairs: Vec<(&str, &str, bool)> =
            shown.iter().map(|h| (h.name, h.value.as_str(), h.redacted)).collect();
        assert_eq!(
            pairs,
            [
                ("host", "agent.example:8443", false),
                ("user-agent", USER_AGENT, false),
                ("content-type", "application/json", false),
                ("content-length", SHOWN_LENGTH, false),
                ("webhook-id", "evt_Ev0PV52K25", false),
                ("webhook-timestamp", SHOWN_TIMESTAMP, false),
                ("webhook-signature", "v1,… (redacted)", true),
            ]
        );
        let default_port = shown_host("https://agent.example:443/x");
        assert_eq!(default_port, "agent.example", "the scheme's own port is not written");
        assert_eq!(shown_host("http://127.0.0.1:9/x"), "127.0.0.1:9");
    }

    fn shown_host(url: &str) -> String {
        let shown = shown(&AgentUrl::parse(url).unwrap(), &ExternalEventId::new("Ev1").unwrap());
        shown[0].value.clone()
    }
}

//! The operational webhook (issue 41): one URL and secret for the whole deployment, told of
//! each operational event in a Standard Webhooks payload (`{"type", "timestamp", "data"}`),
//! signed as agents' dispatches are ([`super::signing`]), sent with the agents' client under
//! the same destination rules ([`super::client`], [`super::destination`]).
//!
//! One request per attempt and no retry here: the outbox's schedule is the retry
//! (`docs/dispatch-contract.md`, "The operational webhook"). Each message's `webhook-id` is
//! `msg_` and its outbox row's id, the same on every attempt, so a receiver drops repeats.

use std::time::Duration;

use doorman_domain::{AgentSecret, AgentUrl, OperationalEvent};
use serde::Serialize;
use uuid::Uuid;

use super::client::{DispatchClient, Post, SendError};
use super::destination::DestinationPolicy;
use super::signing::WebhookKey;
use crate::outbound::HttpClientError;

/// The most of the receiver's answer read (the connection is then reused); only its status
/// counts.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Where the operational webhook goes, how it is signed, and how long an attempt may take.
/// `Debug` shows neither the secret (it never prints) nor anything but the URL's origin.
#[derive(Clone)]
pub struct OperationalWebhookSettings {
    pub url: AgentUrl,
    pub secret: AgentSecret,
    /// The longest one attempt may take; past it, the attempt failed.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The agents' rules (`DOORMAN_AGENT_ALLOW_PRIVATE`).
    pub destinations: DestinationPolicy,
    /// Certificates (DER) trusted besides the platform's, as for agents.
    pub extra_roots: Vec<Vec<u8>>,
}

impl std::fmt::Debug for OperationalWebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationalWebhookSettings")
            .field("origin", &self.url.as_url().origin().ascii_serialization())
            .field("timeout", &self.timeout)
            .field("destinations", &self.destinations)
            .finish_non_exhaustive()
    }
}

/// Why an attempt did not end in a 2xx: one line for people (the outbox keeps it), never the
/// URL or the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WebhookFailure(pub String);

/// The sender.
#[derive(Debug)]
pub struct OperationalWebhook {
    client: DispatchClient,
    url: AgentUrl,
    key: WebhookKey,
    timeout: Duration,
}

impl OperationalWebhook {
    pub fn new(settings: &OperationalWebhookSettings) -> Result<Self, HttpClientError> {
        // One receiver, sent to one message at a time by each process.
        let client =
            DispatchClient::new(settings.destinations, settings.connect_timeout, 1, &settings.extra_roots)
                .map_err(HttpClientError::new)?;
        Ok(Self {
            client,
            url: settings.url.clone(),
            key: WebhookKey::new(&settings.secret),
            timeout: settings.timeout,
        })
    }

    /// One attempt of message `id`: its status when the receiver answered 2xx.
    pub async fn send(&self, id: Uuid, event: &OperationalEvent) -> Result<u16, WebhookFailure> {
        let body = render(event);
        let webhook_id = message_id(id);
        let signed = self.key.headers(&webhook_id, &body);
        let post = Post { url: self.url.as_url(), headers: &signed.pairs(), body: &body };
        match tokio::time::timeout(self.timeout, self.client.post(&post, MAX_ANSWER_BYTES)).await {
            Ok(Ok(status)) if (200..300).contains(&status.code) => Ok(status.code),
            Ok(Ok(status)) => Err(WebhookFailure(match status.excerpt {
                Some(excerpt) => format!("answered HTTP {}: {excerpt}", status.code),
                None => format!("answered HTTP {}", status.code),
            })),
            Ok(Err(SendError::Connect(_, reason) | SendError::Interrupted(reason))) => {
                Err(WebhookFailure(reason))
            }
            Ok(Err(SendError::NotAllowed(reason))) => Err(WebhookFailure(reason.to_string())),
            Ok(Err(SendError::InvalidHeader(name))) => {
                Err(WebhookFailure(format!("the {name} header would not be one line")))
            }
            Err(_) => Err(WebhookFailure(format!("no answer within {:?}", self.timeout))),
        }
    }
}

/// `webhook-id`: `msg_` and the message's id, the same on every attempt.
pub fn message_id(id: Uuid) -> String {
    format!("msg_{}", id.simple())
}

#[derive(Serialize)]
struct Document<'a> {
    r#type: &'static str,
    timestamp: String,
    data: Data<'a>,
}

#[derive(Serialize)]
struct Data<'a> {
    tenant_id: String,
    external_event_id: Option<&'a str>,
    detail: Option<&'a str>,
}

/// The Standard Webhooks payload: the event's type, when it happened (RFC 3339, UTC,
/// milliseconds), and what it is about.
pub fn render(event: &OperationalEvent) -> Vec<u8> {
    let document = Document {
        r#type: event.kind.as_str(),
        timestamp: event.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        data: Data {
            tenant_id: event.tenant.to_string(),
            external_event_id: event.external_event_id.as_ref().map(|id| id.as_str()),
            detail: event.detail.as_deref(),
        },
    };
    // Strings and options of strings only: serialising cannot fail.
    serde_json::to_vec(&document).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use doorman_domain::{ExternalEventId, OperationalKind, TenantId};

    use super::*;

    #[test]
    fn the_document_is_a_standard_webhooks_payload_of_the_event() {
        let tenant = TenantId::from_uuid(Uuid::parse_str("7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11").unwrap());
        let event = OperationalEvent {
            kind: OperationalKind::EventExhausted,
            tenant,
            external_event_id: Some(ExternalEventId::new("Ev0PV52K25").unwrap()),
            at: chrono::Utc.with_ymd_and_hms(2026, 12, 8, 14, 2, 1).unwrap(),
            detail: Some("agent answered HTTP 500".into()),
        };
        let document: serde_json::Value = serde_json::from_slice(&render(&event)).unwrap();
        assert_eq!(
            document,
            serde_json::json!({
                "type": "event.exhausted",
                "timestamp": "2026-12-08T14:02:01.000Z",
                "data": {
                    "tenant_id": "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11",
                    "external_event_id": "Ev0PV52K25",
                    "detail": "agent answered HTTP 500"
                }
            })
        );
        let opened = OperationalEvent {
            kind: OperationalKind::AgentCircuitOpened,
            external_event_id: None,
            detail: None,
            ..event
        };
        let document: serde_json::Value = serde_json::from_slice(&render(&opened)).unwrap();
        assert_eq!(document["type"], "agent.circuit_opened");
        assert_eq!(document["data"]["external_event_id"], serde_json::Value::Null);
    }

    /// The headers a receiver verifies: `msg_` and the id, the same for every attempt, and a
    /// signature over `id.timestamp.body` that the specification's example key reproduces.
    #[test]
    fn each_attempt_carries_the_same_id_and_a_signature_over_id_timestamp_and_body() {
        let key = WebhookKey::new(&AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap());
        let id = Uuid::parse_str("0192f0c4-8d1e-7c3a-9b5e-2f6a1d4c8e07").unwrap();
        let webhook_id = message_id(id);
        assert_eq!(webhook_id, "msg_0192f0c48d1e7c3a9b5e2f6a1d4c8e07");
        let body = br#"{"type":"agent.disabled"}"#;
        let signed = key.headers(&webhook_id, body);
        let [(id_name, id_value), (ts_name, ts_value), (sig_name, sig_value)] = signed.pairs();
        assert_eq!((id_name, ts_name, sig_name), ("webhook-id", "webhook-timestamp", "webhook-signature"));
        assert_eq!(id_value, webhook_id);
        let timestamp: i64 = ts_value.parse().unwrap();
        assert!((chrono::Utc::now().timestamp() - timestamp).abs() <= 5, "signed now");
        assert_eq!(sig_value, key.sign(&webhook_id, timestamp, body));

        // Checked independently, as a receiver would: HMAC-SHA256 of `id.timestamp.body`.
        use base64::Engine;
        let secret =
            base64::engine::general_purpose::STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signed_content = [webhook_id.as_bytes(), b".", ts_value.as_bytes(), b".", body].concat();
        let expected =
            ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret), &signed_content);
        assert_eq!(
            sig_value,
            format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(expected.as_ref()))
        );
    }
}

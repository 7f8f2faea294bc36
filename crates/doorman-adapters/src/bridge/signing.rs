//! Standard Webhooks signing (https://www.standardwebhooks.com):
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the
//! bytes of a `whsec_`-prefixed base64 secret (decoded by `AgentSecret::parse`).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use doorman_domain::AgentSecret;
use ring::hmac;

/// A dispatch signing key, from a secret already checked where it entered. Never printed.
#[derive(Clone)]
pub struct WebhookKey(hmac::Key);

impl WebhookKey {
    pub fn new(secret: &AgentSecret) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, secret.expose_bytes()))
    }

    /// The `webhook-signature` header value for one message.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut context = hmac::Context::with_key(&self.0);
        context.update(id.as_bytes());
        context.update(b".");
        context.update(timestamp.to_string().as_bytes());
        context.update(b".");
        context.update(body);
        format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
    }

    /// The three Standard Webhooks headers of one message, signed now (the timestamp is part
    /// of what is signed, so each attempt is signed afresh).
    pub fn headers<'a>(&self, id: &'a str, body: &[u8]) -> SignedHeaders<'a> {
        let timestamp = chrono::Utc::now().timestamp();
        SignedHeaders { id, timestamp: timestamp.to_string(), signature: self.sign(id, timestamp, body) }
    }
}

/// `webhook-id`, `webhook-timestamp` and `webhook-signature` for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders<'a> {
    id: &'a str,
    timestamp: String,
    signature: String,
}

impl SignedHeaders<'_> {
    /// As the dispatch client writes them ([`super::request::signed`]).
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        super::request::signed(self.id, &self.timestamp, &self.signature)
    }
}

impl fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from the Standard Webhooks specification's reference test suite.
    #[test]
    fn the_specification_example_signs_as_published() {
        let key = WebhookKey::new(&AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap());
        let signature = key.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, br#"{"test": 2432232314}"#);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}

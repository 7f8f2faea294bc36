//! Standard Webhooks signing (https://www.standardwebhooks.com):
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the
//! bytes of a `whsec_`-prefixed base64 secret.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use thiserror::Error;

const PREFIX: &str = "whsec_";
/// Standard Webhooks recommends secrets of 24 to 64 bytes; fewer than 16 is refused outright.
const MIN_KEY_BYTES: usize = 16;

/// A decoded dispatch signing key. Never printed.
#[derive(Clone)]
pub struct WebhookKey(hmac::Key);

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WebhookKeyError {
    #[error("an agent secret must start with `whsec_`")]
    MissingPrefix,
    #[error("an agent secret must be `whsec_` followed by base64")]
    NotBase64,
    #[error("an agent secret must decode to at least 16 bytes")]
    TooShort,
}

impl WebhookKey {
    /// Parses `whsec_<base64>`. Errors never include the secret.
    pub fn parse(secret: &str) -> Result<Self, WebhookKeyError> {
        let encoded = secret.strip_prefix(PREFIX).ok_or(WebhookKeyError::MissingPrefix)?;
        let bytes = STANDARD.decode(encoded).map_err(|_| WebhookKeyError::NotBase64)?;
        if bytes.len() < MIN_KEY_BYTES {
            return Err(WebhookKeyError::TooShort);
        }
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, &bytes)))
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
        let key = WebhookKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = key.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, br#"{"test": 2432232314}"#);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn malformed_secrets_are_refused_without_echoing_them() {
        assert_eq!(
            WebhookKey::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err(),
            WebhookKeyError::MissingPrefix
        );
        assert_eq!(WebhookKey::parse("whsec_not base64!").unwrap_err(), WebhookKeyError::NotBase64);
        assert_eq!(WebhookKey::parse("whsec_c2hvcnQ=").unwrap_err(), WebhookKeyError::TooShort);
        let error = WebhookKey::parse("whsec_c2VjcmV0LXNlY3JldA!!").unwrap_err().to_string();
        assert!(!error.contains("c2VjcmV0"));
        assert!(
            !format!("{:?}", WebhookKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap())
                .contains("MfKQ")
        );
    }
}

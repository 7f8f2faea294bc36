//! Requests signed as Slack signs them: `v0=` + lowercase hex of HMAC-SHA256 over
//! `v0:{timestamp}:{raw body}`, keyed with the signing secret's UTF-8 bytes
//! (`docs/slack-protocol.md`). Written apart from the verifier, so a test that signs here and
//! verifies there checks one against the other.

use ring::hmac;

/// The `X-Slack-Signature` value for `body` sent at `timestamp` (Unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut context = hmac::Context::with_key(&key);
    context.update(format!("v0:{timestamp}:").as_bytes());
    context.update(body);
    let tag = context.sign();
    let mut out = String::with_capacity(3 + 64);
    out.push_str("v0=");
    for byte in tag.as_ref() {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

//! Slack's request signature: HMAC-SHA256 over `v0:{timestamp}:{raw body}`.

use std::fmt;
use std::time::Duration;

use doorman_domain::Fingerprint;
use ring::hmac;

use super::rejection::{Rejection, SignatureProblem};

/// Slack's signing secret. Never printed: `Debug` shows a placeholder.
#[derive(Clone)]
pub struct SigningSecret(hmac::Key);

impl SigningSecret {
    /// The key is the secret's UTF-8 bytes as Slack shows them (not hex-decoded).
    pub fn new(secret: &str) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()))
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(<redacted>)")
    }
}

/// The two signature headers, as raw bytes (`None` when absent).
#[derive(Debug, Clone, Copy, Default)]
pub struct SignatureHeaders<'a> {
    /// `X-Slack-Request-Timestamp`
    pub timestamp: Option<&'a [u8]>,
    /// `X-Slack-Signature`
    pub signature: Option<&'a [u8]>,
}

/// Checks requests against one or more signing secrets.
///
/// Several secrets are accepted at once so a secret can be rotated without downtime:
/// configure old and new, switch the app in Slack, then remove the old one.
#[derive(Debug, Clone)]
pub struct Verifier {
    secrets: Vec<SigningSecret>,
    window: Duration,
}

/// Slack's documented tolerance: five minutes either side of now.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(300);

const VERSION_PREFIX: &[u8] = b"v0=";
const SIGNATURE_HEX_LEN: usize = 64;

impl Verifier {
    /// A verifier for these secrets. An empty list rejects everything (`Mismatch`).
    pub fn new(secrets: Vec<SigningSecret>, window: Duration) -> Self {
        Self { secrets, window }
    }

    /// How many secrets are accepted (for the start-up log; never the secrets themselves).
    pub fn secret_count(&self) -> usize {
        self.secrets.len()
    }

    /// Verifies the raw request: the timestamp within the window of `now_unix` in both
    /// directions, then the signature in constant time (length included) against each
    /// configured secret.
    pub fn verify(
        &self,
        headers: SignatureHeaders<'_>,
        body: &[u8],
        now_unix: i64,
    ) -> Result<Verified, Rejection> {
        let (Some(timestamp), Some(signature)) = (headers.timestamp, headers.signature) else {
            return Err(Rejection::Signature(SignatureProblem::MissingHeaders));
        };
        let seconds = parse_timestamp(timestamp)?;
        if now_unix.abs_diff(seconds) > self.window.as_secs() {
            return Err(Rejection::Stale);
        }
        let expected = parse_signature(signature)?;
        // Every secret is tried, so timing does not reveal which one matched.
        let matched = self.secrets.iter().filter(|secret| check(secret, timestamp, body, &expected)).count();
        if matched == 0 {
            return Err(Rejection::Signature(SignatureProblem::Mismatch));
        }
        let window = i64::try_from(self.window.as_secs()).unwrap_or(i64::MAX);
        Ok(Verified { signature: expected, valid_until: seconds.saturating_add(window) })
    }
}

/// What a verified request proved: its signature, and until when that signature is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    signature: [u8; 32],
    /// Unix seconds: the request's timestamp plus the window.
    valid_until: i64,
}

impl Verified {
    /// The request's fingerprint, for refusing a replay of it: the signature in one spelling
    /// (`v0=` + lowercase hex, whatever case it arrived in), remembered until it would be
    /// refused as stale anyway.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut text = String::with_capacity(3 + 64);
        text.push_str("v0=");
        for byte in self.signature {
            text.push_str(&format!("{byte:02x}"));
        }
        let expires_at = chrono::DateTime::from_timestamp(self.valid_until, 0)
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        Fingerprint::new(text, expires_at).expect("v0= and 64 hex digits is a valid fingerprint")
    }
}

/// Unix seconds: ASCII digits only (no sign, no spaces), at most 12 of them.
fn parse_timestamp(raw: &[u8]) -> Result<i64, Rejection> {
    let malformed = Rejection::Signature(SignatureProblem::MalformedTimestamp);
    if raw.is_empty() || raw.len() > 12 || !raw.iter().all(u8::is_ascii_digit) {
        return Err(malformed);
    }
    std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok()).ok_or(malformed)
}

/// `v0=` followed by exactly 64 hex digits, decoded.
fn parse_signature(raw: &[u8]) -> Result<[u8; 32], Rejection> {
    let Some(hex) = raw.strip_prefix(VERSION_PREFIX) else {
        let looks_versioned = raw.first().is_some_and(|b| *b == b'v') && raw.contains(&b'=');
        return Err(Rejection::Signature(if looks_versioned {
            SignatureProblem::UnsupportedVersion
        } else {
            SignatureProblem::MalformedSignature
        }));
    };
    let malformed = Rejection::Signature(SignatureProblem::MalformedSignature);
    if hex.len() != SIGNATURE_HEX_LEN {
        return Err(malformed);
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *byte =
            (nibble(pair[0]).ok_or(malformed.clone())? << 4) | nibble(pair[1]).ok_or(malformed.clone())?;
    }
    Ok(out)
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// HMAC over `v0:{timestamp}:{body}`, checked by `ring::hmac::verify`, which compares in
/// constant time and compares lengths too. The one copy of the body this makes is the price
/// of using ring's audited comparison rather than a hand-written one.
fn check(secret: &SigningSecret, timestamp: &[u8], body: &[u8], expected: &[u8; 32]) -> bool {
    let mut message = Vec::with_capacity(4 + timestamp.len() + body.len());
    message.extend_from_slice(b"v0:");
    message.extend_from_slice(timestamp);
    message.push(b':');
    message.extend_from_slice(body);
    hmac::verify(&secret.0, &message, expected).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_decode_in_either_case_and_nothing_else() {
        let lower = format!("v0={}", "ab".repeat(32));
        let upper = format!("v0={}", "AB".repeat(32));
        assert_eq!(parse_signature(lower.as_bytes()).unwrap(), [0xab; 32]);
        assert_eq!(parse_signature(upper.as_bytes()).unwrap(), [0xab; 32]);
        let non_hex = format!("v0={}", "zz".repeat(32));
        assert!(parse_signature(non_hex.as_bytes()).is_err());
        assert!(parse_signature(format!("v0={}", "ab".repeat(31)).as_bytes()).is_err(), "short");
        assert_eq!(
            parse_signature(format!("v1={}", "ab".repeat(32)).as_bytes()),
            Err(Rejection::Signature(SignatureProblem::UnsupportedVersion))
        );
        for unversioned in ["vabc", "x1=abc", "=v"] {
            assert_eq!(
                parse_signature(unversioned.as_bytes()),
                Err(Rejection::Signature(SignatureProblem::MalformedSignature)),
                "{unversioned}: not a version, a bad signature"
            );
        }
    }

    #[test]
    fn timestamps_are_plain_digits() {
        assert_eq!(parse_timestamp(b"1531420618").unwrap(), 1_531_420_618);
        assert_eq!(parse_timestamp(b"999999999999").unwrap(), 999_999_999_999, "twelve digits");
        for bad in [&b""[..], b"-5", b"+5", b" 5", b"12a", b"9999999999999"] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_verifier_counts_its_secrets_for_the_start_up_log() {
        let secrets = vec![SigningSecret::new("old"), SigningSecret::new("new")];
        assert_eq!(Verifier::new(secrets, Duration::from_secs(300)).secret_count(), 2);
    }

    #[test]
    fn a_secret_never_prints() {
        assert_eq!(
            format!("{:?}", SigningSecret::new("8f742231b10e8888abcd99yyyzzz85a5")),
            "SigningSecret(<redacted>)"
        );
    }
}

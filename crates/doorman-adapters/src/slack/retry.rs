//! `X-Slack-Retry-Num` and `X-Slack-Retry-Reason`: unsigned hints (decision 7).

use doorman_domain::{Delivery, RetryReason};

/// The longest reason header read; anything longer is not one of Slack's and reads `other`.
const MAX_REASON_LEN: usize = 64;

/// Reads the delivery attempt and retry reason. A missing, empty, non-numeric, negative or
/// overflowing number reads as 0; a reason that is not one of the six documented ones reads
/// as `Other`. The raw header text is never kept, so it cannot reach a log.
pub fn delivery_from_headers(retry_num: Option<&[u8]>, retry_reason: Option<&[u8]>) -> Delivery {
    Delivery {
        attempt: attempt(retry_num),
        retry_reason: retry_reason.map(reason),
        replay: false,
        redelivery: 0,
    }
}

fn attempt(raw: Option<&[u8]>) -> u32 {
    let Some(raw) = raw else { return 0 };
    let raw = raw.trim_ascii();
    if raw.is_empty() || !raw.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn reason(raw: &[u8]) -> RetryReason {
    if raw.len() > MAX_REASON_LEN {
        return RetryReason::Other;
    }
    let raw = raw.trim_ascii();
    RetryReason::ALL.into_iter().find(|r| r.as_str().as_bytes() == raw).unwrap_or(RetryReason::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbled_retry_numbers_read_as_zero() {
        // "+1" parses as a u32 in Rust; Slack never sends a sign, so it reads as garbled.
        for raw in [&b""[..], b"abc", b"-1", b"+1", b"99999999999", b"1.5", b"\xff"] {
            assert_eq!(attempt(Some(raw)), 0, "{raw:?}");
        }
        assert_eq!(attempt(None), 0);
        assert_eq!(attempt(Some(b"3")), 3);
    }

    #[test]
    fn only_documented_reasons_are_recognised() {
        assert_eq!(reason(b"http_timeout"), RetryReason::HttpTimeout);
        assert_eq!(reason(b"unknown_error"), RetryReason::UnknownError);
        assert_eq!(reason(b"http_timeout\r\nX-Injected: 1"), RetryReason::Other);
        assert_eq!(reason(&[b'a'; 100]), RetryReason::Other);
        // Read up to 64 bytes, padding included; past that, not one of Slack's.
        let padded = |len: usize| format!("{:<len$}", "http_timeout");
        assert_eq!(reason(padded(64).as_bytes()), RetryReason::HttpTimeout);
        assert_eq!(reason(padded(65).as_bytes()), RetryReason::Other);
        assert_eq!(delivery_from_headers(None, None).retry_reason, None);
    }
}

//! What one dispatch of a numbered event met: when it started and ended, the agent's status or
//! why there was none, and the first KiB of the agent's answer. A first dispatch that succeeds
//! rides on its receipt's completion ([`Delivered`]); every other one is an attempt on record
//! ([`AttemptRecord`]).

use chrono::{DateTime, Utc};

/// The most of an agent's answer body kept with an attempt.
pub const MAX_ANSWER_EXCERPT: usize = 1024;

/// Why a dispatch did not end in a 2xx: what an operator filters on and a chart counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The agent answered with a status that is not 2xx (and not one of the two below).
    Status,
    /// A 3xx: redirects are not followed.
    Redirect,
    /// 413: the agent refused the document's size.
    BodyTooLarge,
    /// No connection: refused, reset before sending, or no answer to the connect in time.
    Refused,
    /// The TLS handshake failed (certificate, name, protocol).
    Tls,
    /// The agent's host did not resolve.
    Dns,
    /// No answer within the dispatch timeout.
    Timeout,
    /// The exchange broke after the request may have been read.
    Interrupted,
    /// The destination is not allowed (private address, not https); nothing was sent.
    NotAllowed,
    /// The agent's bound or circuit refused a settled claim; nothing was sent.
    NotAdmitted,
    /// The bot token could not be refreshed, or kept; nothing was sent.
    Token,
    /// A bug: the dispatch could not be built.
    Internal,
}

impl FailureKind {
    pub const ALL: [FailureKind; 12] = [
        Self::Status,
        Self::Redirect,
        Self::BodyTooLarge,
        Self::Refused,
        Self::Tls,
        Self::Dns,
        Self::Timeout,
        Self::Interrupted,
        Self::NotAllowed,
        Self::NotAdmitted,
        Self::Token,
        Self::Internal,
    ];

    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Redirect => "redirect",
            Self::BodyTooLarge => "body_too_large",
            Self::Refused => "refused",
            Self::Tls => "tls",
            Self::Dns => "dns",
            Self::Timeout => "timeout",
            Self::Interrupted => "interrupted",
            Self::NotAllowed => "not_allowed",
            Self::NotAdmitted => "not_admitted",
            Self::Token => "token",
            Self::Internal => "internal",
        }
    }

    /// The kind a stored word names; `None` for one this release does not know (a later
    /// release's: readers show it as `internal`).
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == word)
    }
}

/// The first KiB of an agent's answer body, as text: cut at a character boundary (a body that
/// goes on past the KiB drops the character the cut split), with control characters (but line
/// breaks and tabs) and characters that reorder text replaced, so a page or a log shows it as it is without being steered by it. `None` for an
/// empty body.
pub fn answer_excerpt(body: &[u8]) -> Option<String> {
    let taken = &body[..body.len().min(MAX_ANSWER_EXCERPT)];
    let text = String::from_utf8_lossy(taken);
    // A multi-byte character cut at the limit reads as one replacement character: dropped.
    let text = if taken.len() < body.len() { text.trim_end_matches('\u{fffd}') } else { &text };
    let cleaned: String = text.chars().map(|c| if shown_as_is(c) { c } else { '\u{fffd}' }).collect();
    (!cleaned.trim().is_empty()).then_some(cleaned)
}

/// Whether a character of an agent's answer is shown as it is: not a control character (but
/// line breaks and tabs), nor one that reorders the text around it (bidirectional marks,
/// overrides, embeddings and isolates, which could make a page or a terminal show other words
/// than the agent sent).
fn shown_as_is(c: char) -> bool {
    let reorders = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    !reorders && (!c.is_control() || matches!(c, '\n' | '\r' | '\t'))
}

/// A first dispatch that the agent took: written with the receipt's completion (the same
/// statement), so a success costs nothing more than it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// The agent's 2xx status.
    pub status: u16,
    /// A replay's success: recorded as an attempt row, the receipt's own first dispatch left
    /// as it was.
    pub replay: bool,
}

/// One dispatch of an event that is on record as a row: every failed one and every replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// An operator's replay (`delivery.replay`), not Doorman's own dispatch.
    pub replay: bool,
    /// The agent's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Why it did not end in a 2xx; `None` for a replay that succeeded. A stored word this
    /// release does not know reads as `Internal`.
    pub failure: Option<FailureKind>,
    /// The one-line reason (as on the receipt).
    pub reason: Option<String>,
    /// The first KiB of the agent's answer body, as text.
    pub answer: Option<String>,
}

impl AttemptRecord {
    /// How long the agent took, in milliseconds.
    pub fn latency_ms(&self) -> i64 {
        (self.ended_at - self.started_at).num_milliseconds().max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word() {
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(FailureKind::parse("from_a_later_release"), None);
    }

    #[test]
    fn an_excerpt_is_the_first_kib_of_text_cut_at_a_character() {
        assert_eq!(answer_excerpt(b""), None);
        assert_eq!(answer_excerpt(b"  \n"), None);
        assert_eq!(answer_excerpt(b"{\"error\":\"down\"}\n").as_deref(), Some("{\"error\":\"down\"}\n"));
        let long = "é".repeat(600); // 1,200 bytes: the 513th character is cut at byte 1,024
        let excerpt = answer_excerpt(long.as_bytes()).unwrap();
        assert_eq!(excerpt, "é".repeat(512));
        assert_eq!(answer_excerpt(b"a\x1b[31mb\0").as_deref(), Some("a\u{fffd}[31mb\u{fffd}"));
        assert_eq!(answer_excerpt("ab\u{202e}cd\r\n".as_bytes()).as_deref(), Some("ab\u{fffd}cd\r\n"));
        assert_eq!(answer_excerpt(&[0xff, b'o', b'k']).as_deref(), Some("\u{fffd}ok"));
    }
}

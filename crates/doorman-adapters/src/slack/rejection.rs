//! Why a request from (or claiming to be from) Slack is refused.

use thiserror::Error;

/// A refused request. The HTTP layer maps each variant to one status: signature problems
/// and staleness to 401, malformed bodies and unsupported envelopes to 400, an unexpected
/// content type to 415. Messages are short, safe to return to the caller, and never echo
/// request content.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rejection {
    #[error("invalid request signature: {0}")]
    Signature(SignatureProblem),
    #[error("request timestamp is outside the allowed window")]
    Stale,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("unsupported content type")]
    UnsupportedMediaType,
    #[error("unsupported envelope type")]
    UnsupportedEnvelope,
}

/// What exactly was wrong with the signature headers; a metric label, never a hint to a
/// forger beyond "invalid".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SignatureProblem {
    #[error("missing signature headers")]
    MissingHeaders,
    #[error("malformed timestamp")]
    MalformedTimestamp,
    #[error("unsupported signature version")]
    UnsupportedVersion,
    #[error("malformed signature")]
    MalformedSignature,
    #[error("signature mismatch")]
    Mismatch,
}

impl Rejection {
    /// A stable label for metrics and logs.
    pub fn cause(&self) -> &'static str {
        match self {
            Rejection::Signature(problem) => problem.cause(),
            Rejection::Stale => "stale_timestamp",
            Rejection::Malformed(_) => "malformed",
            Rejection::UnsupportedMediaType => "unsupported_media_type",
            Rejection::UnsupportedEnvelope => "unsupported_envelope",
        }
    }
}

impl SignatureProblem {
    pub fn cause(self) -> &'static str {
        match self {
            SignatureProblem::MissingHeaders => "missing_headers",
            SignatureProblem::MalformedTimestamp => "malformed_timestamp",
            SignatureProblem::UnsupportedVersion => "unsupported_version",
            SignatureProblem::MalformedSignature => "malformed_signature",
            SignatureProblem::Mismatch => "mismatch",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_the_label_metrics_and_logs_use() {
        let signature = |problem| Rejection::Signature(problem).cause();
        assert_eq!(
            [
                signature(SignatureProblem::MissingHeaders),
                signature(SignatureProblem::MalformedTimestamp),
                signature(SignatureProblem::UnsupportedVersion),
                signature(SignatureProblem::MalformedSignature),
                signature(SignatureProblem::Mismatch),
                Rejection::Stale.cause(),
                Rejection::Malformed("x").cause(),
                Rejection::UnsupportedMediaType.cause(),
                Rejection::UnsupportedEnvelope.cause(),
            ],
            [
                "missing_headers",
                "malformed_timestamp",
                "unsupported_version",
                "malformed_signature",
                "mismatch",
                "stale_timestamp",
                "malformed",
                "unsupported_media_type",
                "unsupported_envelope",
            ]
        );
    }
}

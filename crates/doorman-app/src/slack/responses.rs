//! The one place outcomes become HTTP answers. Bodies are short, fixed reasons: never an
//! internal error message, never request content.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use doorman_adapters::slack::Rejection;
use doorman_domain::{Acknowledgement, StorageError, Unavailability};

use serde_json::json;

use super::body::BodyError;

fn error(status: StatusCode, reason: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({ "error": reason }))
}

pub fn body_error(error_kind: &BodyError) -> HttpResponse {
    match error_kind {
        // Close the connection: the rest of the body was never read.
        BodyError::TooLarge => {
            let mut response = error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
            response.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
            response
        }
        BodyError::Incomplete => error(StatusCode::BAD_REQUEST, "request body incomplete"),
        BodyError::TimedOut => body_timeout(),
    }
}

/// 401 for anything about the signature or timestamp, 415 for a content type the route
/// does not take, 400 for a body that is not what Slack sends. An unsupported envelope
/// type also gets `X-Slack-No-Retry: 1`: re-sending it would not help.
pub fn rejected(rejection: &Rejection) -> HttpResponse {
    match rejection {
        Rejection::Signature(_) | Rejection::Stale => error(StatusCode::UNAUTHORIZED, "invalid request"),
        Rejection::UnsupportedMediaType => {
            error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported content type")
        }
        Rejection::Malformed(reason) => error(StatusCode::BAD_REQUEST, reason),
        Rejection::UnsupportedEnvelope => {
            let mut response = error(StatusCode::BAD_REQUEST, "unsupported envelope type");
            response.headers_mut().insert(
                actix_web::http::header::HeaderName::from_static("x-slack-no-retry"),
                actix_web::http::header::HeaderValue::from_static("1"),
            );
            response
        }
    }
}

/// 200 for everything Slack should not re-send (handled, duplicate, unknown workspace),
/// 503 for what it should (nothing was written, so the retry is handled afresh) with the
/// reason's word (`paused`, `busy`, `storage`, …), 401 for a replayed request.
pub fn acknowledged(ack: &Acknowledgement) -> HttpResponse {
    match ack {
        Acknowledgement::Accepted { .. } | Acknowledgement::Duplicate { .. } | Acknowledgement::Ignored => {
            HttpResponse::Ok().finish()
        }
        Acknowledgement::Replayed { .. } => error(StatusCode::UNAUTHORIZED, "replayed"),
        // Slack retries a 500 as it does a 503; the status tells whoever reads the logs and
        // the metrics that waiting will not fix it.
        Acknowledgement::Unavailable(why @ Unavailability::Storage(StorageError::Unexpected(_))) => {
            HttpResponse::build(StatusCode::INTERNAL_SERVER_ERROR)
                .json(json!({ "error": "storage_error", "reason": why.as_str() }))
        }
        Acknowledgement::Unavailable(why) => HttpResponse::build(StatusCode::SERVICE_UNAVAILABLE)
            .json(json!({ "error": "unavailable", "reason": why.as_str() })),
    }
}

/// 408 for a body that did not arrive in time; the connection is closed.
pub fn body_timeout() -> HttpResponse {
    let mut response = error(StatusCode::REQUEST_TIMEOUT, "request body not received in time");
    response.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    response
}

pub fn challenge(challenge: &str) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "challenge": challenge }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_failure_waiting_fixes_is_503_and_one_it_does_not_is_500() {
        let answer =
            |error| acknowledged(&Acknowledgement::Unavailable(Unavailability::Storage(error))).status();
        assert_eq!(answer(StorageError::Unavailable("lock timeout".into())), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            answer(StorageError::Unconfirmed("cut mid-commit".into())),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            answer(StorageError::Unexpected("a constraint".into())),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}

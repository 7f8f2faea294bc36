//! Errors as RFC 9457 problem details (`application/problem+json`): `type`, `title`,
//! `status`, `detail`, and where it helps the `field` a 422 is about. The one place operator
//! errors become statuses. Never a stack trace, an internal message or a secret: storage
//! failures are logged once here and answered with a fixed sentence.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use doorman_domain::{OperatorError, StorageError, ValidationError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The media type of every error this API answers.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A problem (RFC 9457).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// Identifies the kind of problem: `urn:doorman:problem:<kind>` (listed in
    /// `docs/admin-api.md`).
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    pub detail: String,
    /// For 422: the request field, query parameter or header the refusal is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// For an event with no receipt: `unknown`, as `receipts show` says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_status: Option<String>,
}

/// A problem, as an error a handler returns (boxed: errors travel in every `Result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError(pub Box<Problem>);

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.0.status, self.0.title, self.0.detail)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.0.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code())
            .insert_header((header::CONTENT_TYPE, PROBLEM_JSON))
            .body(serde_json::to_string(&self.0).unwrap_or_default());
        if self.0.status == 401 {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if self.0.status == 503 {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &str, detail: impl Into<String>) -> Self {
        Self(Box::new(Problem {
            kind: format!("urn:doorman:problem:{kind}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
            event_status: None,
        }))
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid admin API key is required: Authorization: Bearer dmk_…",
        )
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed", detail)
    }

    /// 422: a well-formed request with a value that is refused, naming the field.
    pub fn invalid(field: &str, problem: impl std::fmt::Display) -> Self {
        let mut error =
            Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid-value", format!("{field}: {problem}"));
        error.0.field = Some(field.to_owned());
        error
    }

    /// 422 for a value a constructor refused.
    pub fn invalid_value(field: &str, error: &ValidationError) -> Self {
        Self::invalid(field, error.problem)
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the request could not be completed; it is logged",
        )
    }

    /// An operator use case's refusal. `field` names the input a validation or refusal is
    /// about, for the routes where there is one.
    pub fn from_operator(error: OperatorError, field: Option<&str>) -> Self {
        match error {
            OperatorError::UnknownTenant(tenant) => Self::not_found(format!("no tenant with id {tenant}")),
            OperatorError::NotFound { what, id } => Self::not_found(format!("no {what} {id}")),
            OperatorError::Forbidden(why) => Self::new(StatusCode::FORBIDDEN, "forbidden", why),
            OperatorError::NoAgent(tenant) => Self::new(
                StatusCode::CONFLICT,
                "no-agent",
                format!("tenant {tenant} has no agent: PUT its agent first"),
            ),
            OperatorError::WorkspaceTaken => Self::new(
                StatusCode::CONFLICT,
                "workspace-taken",
                "that workspace is linked to another tenant, or would take deliveries another tenant's link receives (its enterprise, or a team inside it)",
            ),
            OperatorError::LinkedOtherwise(existing) => Self::new(
                StatusCode::CONFLICT,
                "workspace-linked-otherwise",
                format!(
                    "the tenant has that team linked as {existing}: unlink it before linking it otherwise"
                ),
            ),
            // As draft-ietf-httpapi-idempotency-key-header says: 422 for a key reused with
            // another payload, 409 while the first request under it is being processed.
            OperatorError::IdempotencyKeyReused => {
                let mut error = Self::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "idempotency-key-reused",
                    "Idempotency-Key: was used before for a different request; use a new key for a new request",
                );
                error.0.field = Some("Idempotency-Key".into());
                error
            }
            OperatorError::IdempotencyKeyInUse => {
                let mut error = Self::new(
                    StatusCode::CONFLICT,
                    "idempotency-key-in-use",
                    "Idempotency-Key: a request with this key is still being processed; send it again shortly for its answer",
                );
                error.0.field = Some("Idempotency-Key".into());
                error
            }
            OperatorError::InstallsOff => Self::new(
                StatusCode::CONFLICT,
                "installs-off",
                "installs are off: the Slack app's client id, secret and public URL are not configured",
            ),
            OperatorError::SignInLinksOff => Self::new(
                StatusCode::CONFLICT,
                "sign-in-links-off",
                "no sign-in link without the console's address: set DOORMAN_CONSOLE_URL (where browsers reach this process's /console/, e.g. https://admin.example) and restart doorman admin serve",
            ),
            OperatorError::Refused { what, reason } => Self::invalid(field.unwrap_or(what), reason),
            OperatorError::Invalid(invalid) => Self::invalid_value(field.unwrap_or(invalid.what), &invalid),
            OperatorError::Storage(error) => Self::storage(&error),
        }
    }

    /// 503 for what waiting fixes, 500 for the rest; logged here, once.
    pub fn storage(error: &StorageError) -> Self {
        match error {
            StorageError::Unavailable(_) => {
                tracing::warn!(error = %error, "database unavailable; answered 503");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the database is unavailable; try again",
                )
            }
            StorageError::Unconfirmed(_) => {
                tracing::warn!(error = %error, "the database did not confirm a write; answered 503");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the database did not confirm the change, which may or may not have been made; check before trying again",
                )
            }
            StorageError::Unexpected(_) => {
                tracing::error!(error = %error, "unexpected storage error; answered 500");
                Self::internal()
            }
        }
    }
}

impl From<OperatorError> for ApiError {
    fn from(error: OperatorError) -> Self {
        Self::from_operator(error, None)
    }
}

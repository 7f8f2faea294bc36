//! The refusals operations share, as the OpenAPI document lists them beside each success.

use utoipa::IntoResponses;

use crate::operator::problem::Problem;

/// What every keyed read may answer besides its success (the OpenAPI document's responses).
#[derive(Debug, IntoResponses)]
pub enum ReadRefusals {
    /// No valid key (`WWW-Authenticate: Bearer`).
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// No such tenant (or one this key may not see), or no such thing of it.
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
}

/// What a read across tenants (the overview) may answer besides its success: it is for a key
/// for every tenant.
#[derive(Debug, IntoResponses)]
pub enum AcrossTenantsRefusals {
    /// No valid key (`WWW-Authenticate: Bearer`).
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// A key scoped to one tenant.
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
}

/// What every change without a body may answer besides its success.
#[derive(Debug, IntoResponses)]
pub enum ChangeRefusals {
    /// No valid key (`WWW-Authenticate: Bearer`).
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// A read-only key (or, creating a tenant, one scoped to a tenant).
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// No such tenant (or one this key may not see), or no such thing of it.
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
}

/// What every change with a JSON body may answer besides its success.
#[derive(Debug, IntoResponses)]
pub enum BodyRefusals {
    /// The body is not well-formed JSON, or not this operation's shape.
    #[response(status = 400, content_type = "application/problem+json")]
    Malformed(Problem),
    /// No valid key (`WWW-Authenticate: Bearer`).
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(Problem),
    /// A read-only key (or, creating a tenant, one scoped to a tenant).
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// No such tenant (or one this key may not see), or no such thing of it.
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// The body is over 64 KiB.
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(Problem),
    /// The body is not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(Problem),
}

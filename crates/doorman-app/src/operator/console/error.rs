//! What a console request that did not succeed answers: an HTML page with the status, a short
//! title and what happened (the admin API's problem details, in words), or, without a live
//! session, the sign-in page.

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use askama::Template;
use doorman_domain::OperatorError;

use crate::operator::problem::ApiError;

#[derive(Debug)]
pub enum ConsoleError {
    /// No live session: to the sign-in page.
    SignIn,
    /// Anything else, shown as a page.
    Page { status: StatusCode, title: String, detail: String },
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage<'a> {
    status: u16,
    title: &'a str,
    detail: &'a str,
}

impl ConsoleError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        let title = status.canonical_reason().unwrap_or("Error").to_owned();
        Self::Page { status, title, detail: detail.into() }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    /// 405 for a console route asked with another method, naming the ones it takes.
    pub fn not_allowed(allow: &'static str) -> HttpResponse {
        let mut response =
            Self::new(StatusCode::METHOD_NOT_ALLOWED, format!("this page takes {allow}")).error_response();
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
        response
    }
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SignIn => f.write_str("sign-in required"),
            Self::Page { status, detail, .. } => write!(f, "{status}: {detail}"),
        }
    }
}

impl From<ApiError> for ConsoleError {
    fn from(error: ApiError) -> Self {
        let problem = error.0;
        let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let detail = match problem.field {
            Some(field) if !problem.detail.contains(&field) => format!("{field}: {}", problem.detail),
            _ => problem.detail,
        };
        Self::Page { status, title: problem.title, detail }
    }
}

impl From<OperatorError> for ConsoleError {
    fn from(error: OperatorError) -> Self {
        ApiError::from(error).into()
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::SignIn => StatusCode::SEE_OTHER,
            Self::Page { status, .. } => *status,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            Self::SignIn => super::see_other("/console/sign-in"),
            Self::Page { status, title, detail } => {
                let page = ErrorPage { status: status.as_u16(), title, detail };
                let mut response = super::page::html(*status, &page);
                if *status == StatusCode::SERVICE_UNAVAILABLE {
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                }
                response
            }
        }
    }
}

//! Query strings: pagination (`limit`, `cursor`) and filters, each refused with a 422 that
//! names the parameter. Unknown parameters are ignored.

use std::collections::HashMap;

use actix_web::HttpRequest;
use chrono::{DateTime, Utc};
use doorman_domain::{Cursor, PageLimit, PageRequest};

use super::problem::ApiError;

/// The query string's parameters (the last of a repeated one wins).
#[derive(Debug)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn of(request: &HttpRequest) -> Self {
        Self(form_urlencoded::parse(request.query_string().as_bytes()).into_owned().collect())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// `limit` (1 to 100, 50 by default) and `cursor` (one this API gave out).
    pub fn page<C: Cursor>(&self) -> Result<PageRequest<C>, ApiError> {
        let limit = match self.get("limit") {
            None => PageLimit::default(),
            Some(raw) => raw
                .parse::<u32>()
                .map_err(|_| ApiError::invalid("limit", "must be a whole number between 1 and 100"))
                .and_then(|n| PageLimit::new(n).map_err(|e| ApiError::invalid_value("limit", &e)))?,
        };
        // `cursor=` (empty) is the first page, as no cursor is.
        let after = self
            .get("cursor")
            .filter(|cursor| !cursor.is_empty())
            .map(C::decode)
            .transpose()
            .map_err(|e| ApiError::invalid_value("cursor", &e))?;
        Ok(PageRequest { limit, after })
    }

    /// An RFC 3339 instant, e.g. `2026-12-01T10:00:00Z`.
    pub fn instant(&self, name: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
        self.get(name).map(|raw| instant(name, raw)).transpose()
    }
}

/// What an instant given to the API (or the command line's filters) must be.
pub const INSTANT_RULE: &str = "must be an RFC 3339 date and time, like 2026-12-01T10:00:00Z";

/// An RFC 3339 instant, or a 422 naming `field`.
pub fn instant(field: &str, raw: &str) -> Result<DateTime<Utc>, ApiError> {
    rfc3339(raw).ok_or_else(|| ApiError::invalid(field, INSTANT_RULE))
}

/// An RFC 3339 instant, in UTC; `None` for anything else.
pub fn rfc3339(raw: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw).ok().map(|at| at.with_timezone(&Utc))
}

//! A JSON request body that must be an object. serde reads a struct from an array as well
//! (`[true]` as `{"enabled": true}`, `[]` as a struct whose fields all have defaults), which no
//! document of this API allows: such a body is refused (400), as any other wrong shape is. And
//! what a body that is not what an operation takes answers: 400, 413 or 415.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, web};
use serde::de::DeserializeOwned;

use crate::operator::problem::ApiError;

/// The body, read as `web::Json` reads it (size limit, content type), then required to be a
/// JSON object of `T`'s shape.
#[derive(Debug)]
pub struct Object<T>(pub T);

impl<T> Object<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Object<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Object<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(request: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = web::Json::<serde_json::Value>::from_request(request, payload);
        Box::pin(async move {
            // The JsonConfig's error handler has already made the problem (413, 415, 400).
            let value = json.await.map_err(|error| {
                if let Some(problem) = error.as_error::<ApiError>() {
                    problem.clone()
                } else if let Some(error) = error.as_error::<actix_web::error::JsonPayloadError>() {
                    json_error(error)
                } else {
                    ApiError::bad_request("the body could not be read")
                }
            })?;
            match value.into_inner() {
                object @ serde_json::Value::Object(_) => {
                    serde_json::from_value(object).map(Object).map_err(|e| malformed(&e))
                }
                _ => Err(ApiError::bad_request("the body must be a JSON object")),
            }
        })
    }
}

/// A body that is not what the operation takes: too large (413), not JSON (415), not
/// well-formed or of the wrong shape (400). The detail never quotes the body.
pub fn json_error(error: &actix_web::error::JsonPayloadError) -> ApiError {
    use actix_web::error::JsonPayloadError as E;
    match error {
        E::OverflowKnownLength { .. } | E::Overflow { .. } => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", "the body is over 64 KiB")
        }
        E::ContentType => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "the body must be application/json",
        ),
        E::Deserialize(error) => malformed(error),
        _ => ApiError::bad_request("the body could not be read"),
    }
}

/// What is wrong with a body, without quoting it: a missing or unknown field is named (an
/// unknown one in `field` too: a misspelt field is refused, not ignored), a wrong type is
/// located.
pub fn malformed(error: &serde_json::Error) -> ApiError {
    let message = error.to_string();
    let detail = match error.classify() {
        serde_json::error::Category::Data if message.starts_with("missing field") => {
            message.split(" at line").next().unwrap_or("a required field is missing").to_owned()
        }
        serde_json::error::Category::Data if message.starts_with("unknown field `") => {
            // A name, never a value; cut short and to printable characters, whatever was sent.
            let name: String = message["unknown field `".len()..]
                .split('`')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect();
            let mut refused = ApiError::bad_request(format!(
                "unknown field `{name}`: this operation takes only the fields its schema names"
            ));
            refused.0.field = Some(name);
            return refused;
        }
        serde_json::error::Category::Data if message.starts_with("data did not match any variant") => {
            "the body is none of this operation's shapes (its schema lists them)".to_owned()
        }
        // Read from a JSON value, the error has no place in the text (line 0).
        serde_json::error::Category::Data if error.line() == 0 => "a value has the wrong type".to_owned(),
        serde_json::error::Category::Data => {
            format!("a value has the wrong type (line {}, column {})", error.line(), error.column())
        }
        _ => format!("the body is not well-formed JSON (line {}, column {})", error.line(), error.column()),
    };
    ApiError::bad_request(detail)
}

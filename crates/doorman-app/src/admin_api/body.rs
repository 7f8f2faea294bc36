//! A JSON request body that must be an object. serde reads a struct from an array as well
//! (`[true]` as `{"enabled": true}`, `[]` as a struct whose fields all have defaults), which no
//! document of this API allows: such a body is refused (400), as any other wrong shape is.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use serde::de::DeserializeOwned;

use super::problem::{ApiError, json_error, malformed};

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

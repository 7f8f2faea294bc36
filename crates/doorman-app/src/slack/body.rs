//! Reading a request body with a hard limit, in size and in time.

use std::time::Duration;

use actix_web::HttpRequest;
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::web::{self, Bytes, BytesMut};
use futures_util::StreamExt;

#[derive(Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than the limit: refused without reading the rest.
    TooLarge,
    /// The client stopped sending or the stream broke.
    Incomplete,
    /// The body did not arrive within the read timeout (a client trickling bytes).
    TimedOut,
}

/// Reads the whole body, refusing at once when `Content-Length` announces more than `limit`,
/// stopping as soon as the bytes read pass it (the rest is never buffered), and giving up
/// when the whole body has not arrived within `timeout`.
pub async fn read_limited(
    request: &HttpRequest,
    payload: web::Payload,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, BodyError> {
    tokio::time::timeout(timeout, read(request, payload, limit)).await.unwrap_or(Err(BodyError::TimedOut))
}

async fn read(request: &HttpRequest, mut payload: web::Payload, limit: usize) -> Result<Bytes, BodyError> {
    let announced = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|len| len > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut body = BytesMut::with_capacity(announced.unwrap_or(8 * 1024).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| BodyError::Incomplete)?;
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

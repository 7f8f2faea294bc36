//! The console's stylesheet and script, served by Doorman itself (no CDN, no build step):
//! compiled into the binary, so a page and its assets never disagree.

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use super::ConsoleError;

const STYLESHEET: &str = include_str!("assets/console.css");
const SCRIPT: &str = include_str!("assets/console.js");

pub async fn serve(name: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    let (body, kind) = match name.as_str() {
        "console.css" => (STYLESHEET, "text/css; charset=utf-8"),
        "console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => return Err(ConsoleError::not_found("no such file")),
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(body))
}

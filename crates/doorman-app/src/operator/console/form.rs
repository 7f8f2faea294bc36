//! Forms posted to the console. A form that changes something must come from the console's
//! own origin (the browser's `Origin`, scheme, host and port, against [`super::origin`]) and
//! carry the session's form token (`csrf`): a page on another site can make a signed-in
//! browser post, but cannot read the token. The token is derived from the session's cookie,
//! so it needs no storage and dies with the session.

use actix_web::HttpRequest;
use actix_web::http::header;
use doorman_adapters::secrets::token_hash;

use url::Origin;

use super::{ConsoleError, origin};

/// The most a console form may be.
pub const MAX_FORM_BYTES: usize = 16 * 1024;

/// The token a session's forms carry.
pub fn token_for(cookie: &str) -> String {
    token_hash(&format!("doorman-console-form:{cookie}"))
}

/// A posted form's fields, in order: [`Form::get`] reads the last of a repeated one,
/// [`Form::all`] every one (a list's ticked rows).
#[derive(Debug)]
pub struct Form(Vec<(String, String)>);

impl Form {
    /// A form that changes something: from the console's origin, with `expected` as its token.
    pub fn checked(
        request: &HttpRequest,
        body: &[u8],
        console: &Origin,
        expected: &str,
    ) -> Result<Self, ConsoleError> {
        let form = Self::from_this_origin(request, body, console)?;
        let presented = form.raw("csrf").map(str::as_bytes).unwrap_or_default();
        if !same(presented, expected.as_bytes()) {
            tracing::warn!(
                client.address = request.peer_addr().map(|a| a.ip().to_string()),
                path = request.match_pattern().unwrap_or_default(),
                "console form refused: missing or stale form token"
            );
            return Err(ConsoleError::forbidden(
                "this form's token is missing or stale: reload the page and try again",
            ));
        }
        Ok(form)
    }

    /// A form with no session yet (signing in): from the console's origin.
    pub fn from_this_origin(
        request: &HttpRequest,
        body: &[u8],
        console: &Origin,
    ) -> Result<Self, ConsoleError> {
        if !from_this_origin(request, console) {
            tracing::warn!(
                client.address = request.peer_addr().map(|a| a.ip().to_string()),
                path = request.match_pattern().unwrap_or_default(),
                console.origin = console.ascii_serialization(),
                "console form refused: posted from another origin"
            );
            return Err(ConsoleError::forbidden("forms are accepted only from the console's own pages"));
        }
        Ok(Self(form_urlencoded::parse(body).into_owned().collect()))
    }

    /// A field as posted (the last, when repeated).
    fn raw(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(field, _)| field == name).map(|(_, value)| value.as_str())
    }

    /// A field, trimmed; `None` when it is missing or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.raw(name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// Every value of a repeated field (ticked checkboxes of one name), trimmed, blanks left
    /// out, in the page's order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(field, _)| field == name)
            .map(|(_, value)| value.trim())
            .filter(|v| !v.is_empty())
            .collect()
    }

    /// A field that must be filled in.
    pub fn required(&self, name: &str) -> Result<&str, ConsoleError> {
        self.get(name).ok_or_else(|| ConsoleError::bad_request(format!("{name}: is required")))
    }

    /// A checkbox: ticked or not.
    pub fn ticked(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }
}

/// Whether the browser says the form came from the console: its `Origin` (sent with every
/// POST by current browsers) is the console's, scheme, host and port; or, without one,
/// `Sec-Fetch-Site` does not say another site. A client that sends neither (curl) is not a
/// browser another site can drive.
fn from_this_origin(request: &HttpRequest, console: &Origin) -> bool {
    let said = |name| request.headers().get(name).and_then(|v| v.to_str().ok());
    match said(header::ORIGIN) {
        Some(origin) => origin::parse(origin) == *console,
        None => !matches!(
            said(header::HeaderName::from_static("sec-fetch-site")),
            Some("cross-site" | "same-site")
        ),
    }
}

/// Equal, taking the same time whatever the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn a_changing_form_needs_the_consoles_origin_and_the_sessions_token() {
        let token = token_for("cookie-value");
        let body = format!("csrf={token}&name=+Acme+");
        let console = origin::parse("https://console.example");
        let here = || TestRequest::post().insert_header((header::HOST, "console.example"));
        let form = Form::checked(
            &here().insert_header((header::ORIGIN, "https://console.example")).to_http_request(),
            body.as_bytes(),
            &console,
            &token,
        )
        .unwrap();
        assert_eq!(form.get("name"), Some("Acme"));
        assert!(
            Form::checked(&here().to_http_request(), body.as_bytes(), &console, &token).is_ok(),
            "no Origin: not a browser"
        );
        for origin in [
            "https://evil.example",
            "null",
            "https://console.example.evil.example",
            "http://console.example",
            "https://console.example:8443",
        ] {
            let request = here().insert_header((header::ORIGIN, origin)).to_http_request();
            assert!(Form::checked(&request, body.as_bytes(), &console, &token).is_err(), "{origin}");
        }
        let cross = here().insert_header(("sec-fetch-site", "cross-site")).to_http_request();
        assert!(Form::checked(&cross, body.as_bytes(), &console, &token).is_err());
        for stale in ["name=x".to_owned(), format!("csrf={}", token_for("another session"))] {
            let request = here().to_http_request();
            assert!(Form::checked(&request, stale.as_bytes(), &console, &token).is_err(), "{stale}");
        }
    }

    #[test]
    fn blank_fields_are_missing() {
        let form = Form(vec![("a".into(), "  ".into()), ("b".into(), " x ".into())]);
        assert_eq!((form.get("a"), form.get("b"), form.get("c")), (None, Some("x"), None));
        assert!(form.required("a").is_err());
    }

    #[test]
    fn a_repeated_field_is_read_whole_by_all_and_by_its_last_value_by_get() {
        let pair = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        let form = Form(vec![pair("id", "Ev1"), pair("other", "x"), pair("id", " "), pair("id", " Ev2 ")]);
        assert_eq!(form.all("id"), ["Ev1", "Ev2"], "in order, trimmed, blanks left out");
        assert_eq!(form.get("id"), Some("Ev2"));
        assert!(form.all("none").is_empty());
    }
}

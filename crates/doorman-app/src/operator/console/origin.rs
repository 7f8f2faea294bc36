//! Where the browser reached the console: its origin (scheme, host and port), which every
//! form's `Origin` must be, and whose scheme names the session cookie. `DOORMAN_CONSOLE_URL`
//! when it is set; otherwise, for a request from a proxy in `DOORMAN_TRUSTED_PROXIES`, what
//! its `Forwarded` or `X-Forwarded-Host`/`-Proto` headers say; otherwise the request's own
//! `Host` and scheme. Nobody else's forwarded headers count: any client can write them.

use actix_web::HttpRequest;
use actix_web::http::header;
use url::{Origin, Url};

use crate::config::ConsoleAddress;

/// The console's origin for this request.
pub fn of(request: &HttpRequest, address: &ConsoleAddress) -> Origin {
    if let Some(url) = &address.url {
        return url.origin();
    }
    let from_proxy = request.peer_addr().is_some_and(|peer| address.trusts(peer.ip()));
    let (scheme, host) = if from_proxy {
        let info = request.connection_info();
        (info.scheme().to_owned(), info.host().to_owned())
    } else {
        (own_scheme(request).to_owned(), own_host(request))
    };
    parse(&format!("{scheme}://{host}"))
}

/// `text`'s origin (an opaque one, equal to no other, when it is not an http(s) URL).
pub fn parse(text: &str) -> Origin {
    match Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => url.origin(),
        _ => Origin::new_opaque(),
    }
}

/// Whether the console is served over https (its cookie is then `Secure` and `__Host-`).
pub fn is_https(origin: &Origin) -> bool {
    matches!(origin, Origin::Tuple(scheme, ..) if scheme == "https")
}

fn own_scheme(request: &HttpRequest) -> &'static str {
    if request.app_config().secure() { "https" } else { "http" }
}

/// The `Host` the client asked for (HTTP/1.1), or the request line's authority (HTTP/2).
fn own_host(request: &HttpRequest) -> String {
    request
        .headers()
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_else(|| request.app_config().host().to_owned())
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use actix_web::test::TestRequest;

    use super::*;

    const PROXY: &str = "10.0.0.7:50000";
    const CLIENT: &str = "203.0.113.9:50000";

    fn request(peer: &str) -> TestRequest {
        TestRequest::post()
            .peer_addr(peer.parse::<SocketAddr>().unwrap())
            .insert_header((header::HOST, "10.0.0.2:3001"))
            .insert_header(("x-forwarded-host", "console.example"))
            .insert_header(("x-forwarded-proto", "https"))
    }

    fn address(url: Option<&str>, proxies: &[&str]) -> ConsoleAddress {
        ConsoleAddress {
            url: url.map(|u| Url::parse(u).unwrap()),
            trusted_proxies: proxies.iter().map(|p| p.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn forwarded_headers_count_only_from_a_trusted_proxy_and_the_console_url_above_all() {
        let forwarded = parse("https://console.example");
        let own = parse("http://10.0.0.2:3001");
        let trusting = address(None, &["10.0.0.0/24"]);
        assert_eq!(of(&request(PROXY).to_http_request(), &trusting), forwarded);
        let mapped = "[::ffff:10.0.0.7]:50000";
        assert_eq!(of(&request(mapped).to_http_request(), &trusting), forwarded, "IPv4 over IPv6");
        assert_eq!(of(&request(CLIENT).to_http_request(), &trusting), own, "not a trusted peer");
        assert_eq!(of(&request(PROXY).to_http_request(), &address(None, &[])), own, "nobody trusted");
        let fixed = address(Some("https://admin.example/"), &["10.0.0.0/24"]);
        assert_eq!(of(&request(PROXY).to_http_request(), &fixed), parse("https://admin.example:443"));
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(parse("https://Admin.Example"), parse("https://admin.example:443/"));
        assert_ne!(parse("http://admin.example"), parse("https://admin.example"));
        assert_ne!(parse("https://admin.example:8443"), parse("https://admin.example"));
        assert_ne!(parse("null"), parse("null"), "an opaque origin equals nothing");
        assert!(is_https(&parse("https://admin.example")) && !is_https(&parse("http://admin.example")));
    }
}

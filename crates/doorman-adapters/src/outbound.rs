//! Outbound HTTP clients (to agents, to Slack), built one way: ring's crypto provider, no
//! redirects followed, no proxy, Doorman's user agent. A client that cannot be built is an
//! [`HttpClientError`]: reqwest's types stay inside the adapters.

use thiserror::Error;

/// An outbound HTTP client could not be built (the TLS configuration, the platform's
/// certificate store).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("building an outbound HTTP client: {0}")]
pub struct HttpClientError(String);

impl HttpClientError {
    pub(crate) fn new(reason: impl std::fmt::Display) -> Self {
        Self(reason.to_string())
    }
}

/// reqwest is built without a bundled crypto provider (the default one, aws-lc, needs a C
/// toolchain of its own); Doorman uses ring's, like its signature checks. Installing twice is
/// harmless: the first stays.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client with Doorman's defaults, then `configure`d by its caller.
pub(crate) fn client(
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, HttpClientError> {
    install_crypto_provider();
    let builder = reqwest::Client::builder()
        // A redirect would send a signed body, or a code, somewhere nobody configured.
        .redirect(reqwest::redirect::Policy::none())
        // `HTTP(S)_PROXY` in the environment would send dispatches to an address nobody
        // checked (the proxy resolves the agent's host, so the public-address rule would not
        // apply), and cost a proxy match per request.
        .no_proxy()
        .user_agent(concat!("doorman/", env!("CARGO_PKG_VERSION")));
    configure(builder).build().map_err(|e| HttpClientError(e.to_string()))
}

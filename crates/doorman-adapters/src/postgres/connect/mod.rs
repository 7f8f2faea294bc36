//! Every connection Doorman opens to PostgreSQL (the pools, the directory's listener,
//! migrations), made as the URL says the way libpq reads it: `sslmode` (`disable`, `allow`,
//! `prefer`, the default, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file
//! of the certificates to trust, or `system` for the platform's store).
//!
//! tokio-postgres reads only `disable`, `prefer` and `require` and checks no certificate, so
//! the two TLS parameters are taken out of the URL here and applied with rustls:
//! - `prefer`, `allow`: TLS if the server offers it, else plain (`allow` is read as `prefer`);
//! - `require`: TLS or nothing; the certificate is checked only if `sslrootcert` names roots
//!   (as libpq does when a root file exists);
//! - `verify-ca`: TLS, and the server's certificate must chain to a trusted root;
//! - `verify-full`: the same, and must name the host connected to.
//!
//! What a connection sets once it is open (its time limits) is [`SessionLimits`]'s.
//!
//! The parts: [`url`] takes the TLS parameters out of the URL; [`trust`] says which
//! certificates are trusted and how a server's is checked; [`tls`] is tokio-postgres's TLS hook
//! over rustls; [`session_limits`] the limits a connection sets once open.

mod session_limits;
mod tls;
mod trust;
mod url;

use std::time::Duration;

use tokio_postgres::config::SslMode;

pub use session_limits::SessionLimits;
pub use tls::{RustlsConnect, RustlsHandshake, RustlsStream};
use trust::load_roots;
pub(crate) use url::on_host;
use url::take_tls_parameters;

/// What is wrong with a URL's TLS parameters. Names the parameter, never the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsSettingError {
    #[error("sslmode {0:?} is not one of disable, allow, prefer, require, verify-ca, verify-full")]
    Mode(String),
    #[error("sslrootcert: {0}")]
    Roots(String),
    #[error("sslmode={0} needs sslrootcert (a PEM file of the certificates to trust, or system)")]
    NoRoots(&'static str),
    #[error("the database URL is not valid: {0}")]
    Url(String),
}

/// How the certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Encrypted, not verified (`prefer`, `require` without roots).
    Nothing,
    /// Chains to a trusted root (`verify-ca`, and `require` with roots).
    Chain,
    /// Chains, and names the host (`verify-full`).
    ChainAndName,
}

/// A URL's connection settings: tokio-postgres's config, and the TLS connector it needs.
#[derive(Clone)]
pub struct Target {
    config: tokio_postgres::Config,
    tls: RustlsConnect,
}

impl std::fmt::Debug for Target {
    // The config holds the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("ssl_mode", &self.config.get_ssl_mode()).finish_non_exhaustive()
    }
}

impl Target {
    /// Reads `url` (a `postgres://` URL, several hosts allowed).
    pub fn parse(url: &str) -> Result<Self, TlsSettingError> {
        let (rest, mode, roots) = take_tls_parameters(url)?;
        let mut config: tokio_postgres::Config =
            rest.parse().map_err(|e: tokio_postgres::Error| TlsSettingError::Url(e.to_string()))?;
        let (ssl_mode, check) = match mode.as_deref().unwrap_or("prefer") {
            "disable" => (SslMode::Disable, Check::Nothing),
            "allow" | "prefer" => (SslMode::Prefer, Check::Nothing),
            "require" if roots.is_some() => (SslMode::Require, Check::Chain),
            "require" => (SslMode::Require, Check::Nothing),
            "verify-ca" => (SslMode::Require, Check::Chain),
            "verify-full" => (SslMode::Require, Check::ChainAndName),
            other => return Err(TlsSettingError::Mode(other.to_owned())),
        };
        config.ssl_mode(ssl_mode);
        // A peer gone without a FIN (a cut network, a frozen host) is noticed within about a
        // minute, and an address that does not answer within 5 s is given up, unless the URL
        // says otherwise.
        config.keepalives(true);
        if !url.contains("keepalives_idle=") {
            config.keepalives_idle(Duration::from_secs(30));
        }
        if !url.contains("connect_timeout=") {
            config.connect_timeout(Duration::from_secs(5));
        }
        let needs_roots = check != Check::Nothing;
        let roots = match (roots.as_deref(), needs_roots) {
            (_, false) => None,
            (None, true) => {
                return Err(TlsSettingError::NoRoots(if check == Check::Chain {
                    "verify-ca"
                } else {
                    "verify-full"
                }));
            }
            (Some(roots), true) => Some(load_roots(roots)?),
        };
        Ok(Self { config, tls: RustlsConnect::new(check, roots)? })
    }

    /// The settings, to add to before connecting.
    pub fn config_mut(&mut self) -> &mut tokio_postgres::Config {
        &mut self.config
    }

    /// Opens a connection: the client, and the connection to poll; or what went wrong, in
    /// words ([`describe`]). The whole handshake (TCP, TLS, authentication) is bounded by the
    /// connect timeout per host, as libpq bounds it: tokio-postgres bounds only the TCP connect,
    /// so a peer that accepts and then never answers (a half-dead proxy) would hold the attempt,
    /// and its place in the pool, for ever.
    pub async fn connect(
        &self,
    ) -> Result<
        (tokio_postgres::Client, tokio_postgres::Connection<tokio_postgres::Socket, RustlsStream>),
        String,
    > {
        let per_host = self.config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(5));
        let hosts = u32::try_from(self.config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
        let within = per_host.saturating_mul(hosts);
        match tokio::time::timeout(within, self.config.connect(self.tls.clone())).await {
            Ok(connected) => connected.map_err(|e| describe(&e)),
            Err(_) => Err(format!(
                "the server did not complete the connection (TLS, authentication) within {within:?}"
            )),
        }
    }

    /// Opens a connection for Diesel, with `limits` set on it.
    pub async fn establish(
        &self,
        limits: &SessionLimits,
    ) -> Result<diesel_async::AsyncPgConnection, diesel::ConnectionError> {
        let (client, connection) = self.connect().await.map_err(diesel::ConnectionError::BadConnection)?;
        let conn =
            diesel_async::AsyncPgConnection::try_from_client_and_connection(client, connection).await?;
        limits.apply(conn).await
    }
}

/// What a connection error says, with its causes (`error connecting to server: …`, `db error:
/// FATAL: password authentication failed …`, `invalid peer certificate: …`): never the
/// password, which no layer prints.
pub fn describe(error: &tokio_postgres::Error) -> String {
    use std::error::Error as _;
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_read_as_libpq_reads_them_and_a_bad_one_is_named() {
        let mode = |url: &str| Target::parse(url).map(|t| t.config.get_ssl_mode());
        assert!(matches!(mode("postgres://u@h/db"), Ok(SslMode::Prefer)), "libpq's default");
        assert!(matches!(mode("postgres://u@h/db?sslmode=disable"), Ok(SslMode::Disable)));
        assert!(matches!(mode("postgres://u@h/db?sslmode=allow"), Ok(SslMode::Prefer)));
        assert!(matches!(mode("postgres://u@h/db?sslmode=require"), Ok(SslMode::Require)));
        assert_eq!(
            Target::parse("postgres://u@h/db?sslmode=verify-full").unwrap_err(),
            TlsSettingError::NoRoots("verify-full")
        );
        assert_eq!(
            Target::parse("postgres://u@h/db?sslmode=strict").unwrap_err(),
            TlsSettingError::Mode("strict".into())
        );
        let missing =
            Target::parse("postgres://u@h/db?sslmode=verify-ca&sslrootcert=/nonexistent.pem").unwrap_err();
        assert!(
            matches!(missing, TlsSettingError::Roots(ref why) if why.contains("cannot read")),
            "{missing}"
        );
    }
}

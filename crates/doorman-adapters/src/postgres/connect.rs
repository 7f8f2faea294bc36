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

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

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

/// The time limits a session keeps, set when it is opened (and, through a transaction pooler,
/// per transaction: [`SessionLimits::local_settings`]). Zero means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionLimits {
    /// `statement_timeout`: the longest any statement may run.
    pub statement: Duration,
    /// `lock_timeout`: the longest a statement may wait for a lock.
    pub lock: Duration,
    /// `idle_in_transaction_session_timeout`: a transaction left open this long is ended by
    /// the server (its locks with it).
    pub idle_in_transaction: Duration,
}

impl SessionLimits {
    fn settings(&self) -> [(&'static str, Duration); 3] {
        [
            ("statement_timeout", self.statement),
            ("lock_timeout", self.lock),
            ("idle_in_transaction_session_timeout", self.idle_in_transaction),
        ]
    }

    /// `SET …` for the session.
    pub fn session_sql(&self) -> String {
        self.settings().iter().map(|(name, d)| format!("SET {name} = {}; ", d.as_millis())).collect()
    }

    /// `set_config(…, true)` for one transaction, each an item of one `SELECT` list. Not
    /// `SET LOCAL`: Citus forwards a `SET LOCAL` to its workers with the whole query string it
    /// came in, and the rest of a `BEGIN; …` string must not run there.
    pub fn local_settings(&self) -> Vec<String> {
        self.settings()
            .iter()
            .map(|(name, d)| format!("set_config('{name}', '{}', true)", d.as_millis()))
            .collect()
    }

    async fn apply(
        &self,
        mut conn: diesel_async::AsyncPgConnection,
    ) -> Result<diesel_async::AsyncPgConnection, diesel::ConnectionError> {
        if *self != Self::default() {
            use diesel_async::SimpleAsyncConnection;
            conn.batch_execute(&self.session_sql())
                .await
                .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
        }
        Ok(conn)
    }
}

/// `sslmode` and `sslrootcert` taken out of the URL's query; the URL without them.
fn take_tls_parameters(url: &str) -> Result<(String, Option<String>, Option<String>), TlsSettingError> {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), None, None)) };
    let (mut mode, mut roots, mut kept) = (None, None, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value);
        match name {
            "sslmode" => mode = Some(value),
            "sslrootcert" => roots = Some(value),
            _ => kept.push(pair),
        }
    }
    let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    Ok((rest, mode, roots))
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1..i + 3)) {
            (b'%', Some(hex))
                if std::str::from_utf8(hex).ok().and_then(|h| u8::from_str_radix(h, 16).ok()).is_some() =>
            {
                out.push(u8::from_str_radix(std::str::from_utf8(hex).unwrap_or("00"), 16).unwrap_or(0));
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The roots `sslrootcert` names: `system`, or a PEM file.
fn load_roots(roots: &str) -> Result<Arc<RootCertStore>, TlsSettingError> {
    let mut store = RootCertStore::empty();
    if roots == "system" {
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = store.add(cert);
        }
    } else {
        let pem =
            std::fs::read(roots).map_err(|e| TlsSettingError::Roots(format!("cannot read {roots}: {e}")))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| TlsSettingError::Roots(format!("{roots} is not PEM: {e}")))?;
            store.add(cert).map_err(|e| TlsSettingError::Roots(format!("{roots}: {e}")))?;
        }
    }
    if store.is_empty() {
        return Err(TlsSettingError::Roots(format!("{roots} holds no certificate")));
    }
    Ok(Arc::new(store))
}

/// tokio-postgres's TLS hook over rustls.
#[derive(Clone)]
pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl RustlsConnect {
    fn new(check: Check, roots: Option<Arc<RootCertStore>>) -> Result<Self, TlsSettingError> {
        crate::outbound::install_crypto_provider();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsSettingError::Roots(e.to_string()))?;
        let verifier: Arc<dyn ServerCertVerifier> = match (check, roots) {
            (Check::Nothing, _) | (_, None) => Arc::new(Unverified(Signatures { provider, lenient: true })),
            (Check::ChainAndName, Some(roots)) => {
                rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| TlsSettingError::Roots(e.to_string()))?
            }
            (Check::Chain, Some(roots)) => {
                Arc::new(ChainOnly { roots, signatures: Signatures { provider, lenient: false } })
            }
        };
        let config = builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
        Ok(Self { config: Arc::new(config) })
    }
}

impl std::fmt::Debug for RustlsConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RustlsConnect")
    }
}

impl<S> MakeTlsConnect<S> for RustlsConnect
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsHandshake;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Self::TlsConnect, Self::Error> {
        // A host given as an address is named by it (verify-full then checks an IP SAN).
        let name = ServerName::try_from(domain.trim_start_matches('[').trim_end_matches(']').to_owned())?;
        Ok(RustlsHandshake { config: self.config.clone(), name })
    }
}

/// One handshake.
#[derive(Debug)]
pub struct RustlsHandshake {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsHandshake
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = std::io::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move { connector.connect(self.name, stream).await.map(RustlsStream) })
    }
}

/// A TLS session to PostgreSQL.
#[derive(Debug)]
pub struct RustlsStream<S = tokio_postgres::Socket>(tokio_rustls::client::TlsStream<S>);

impl<S> tokio_postgres::tls::TlsStream for RustlsStream<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM without channel binding (tokio-postgres's `channel_binding=prefer` then
        // authenticates without it).
        ChannelBinding::none()
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The handshake's signatures, checked with the provider's algorithms; `lenient`: accepted when
/// the certificate cannot be read (see [`Unverified`]).
#[derive(Debug)]
struct Signatures {
    provider: Arc<rustls::crypto::CryptoProvider>,
    lenient: bool,
}

impl Signatures {
    fn checked(
        &self,
        checked: Result<HandshakeSignatureValid, rustls::Error>,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match checked {
            Err(rustls::Error::InvalidCertificate(_)) if self.lenient => {
                Ok(HandshakeSignatureValid::assertion())
            }
            other => other,
        }
    }

    fn tls12(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        self.checked(rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms))
    }

    fn tls13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        self.checked(rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms))
    }

    fn schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// `prefer`, `require` without roots: encrypted, nothing about the server checked (libpq's
/// behaviour). A handshake signature over a certificate that cannot be read (an X.509 version 1
/// certificate, as Citus and older `openssl x509 -req` setups generate, which webpki refuses to
/// parse) is accepted: libpq connects to those, and here any server's certificate would be.
#[derive(Debug)]
struct Unverified(Signatures);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.schemes()
    }
}

/// `verify-ca`: the chain must reach a trusted root; the name is not checked.
#[derive(Debug)]
struct ChainOnly {
    roots: Arc<RootCertStore>,
    signatures: Signatures,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.signatures.provider.signature_verification_algorithms.all,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signatures.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signatures.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.signatures.schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, mode, roots) =
            take_tls_parameters("postgres://u@h1:5432,h2/db?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=%2Ftmp%2Fca.pem")
                .unwrap();
        assert_eq!(rest, "postgres://u@h1:5432,h2/db?target_session_attrs=read-write");
        assert_eq!((mode.as_deref(), roots.as_deref()), (Some("verify-full"), Some("/tmp/ca.pem")));
        assert_eq!(take_tls_parameters("postgres://u@h/db").unwrap().0, "postgres://u@h/db");
    }

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

    #[test]
    fn session_limits_are_set_in_milliseconds_for_the_session_or_one_transaction() {
        let limits = SessionLimits {
            statement: Duration::from_millis(1500),
            lock: Duration::from_secs(1),
            idle_in_transaction: Duration::from_secs(10),
        };
        assert_eq!(
            limits.session_sql(),
            "SET statement_timeout = 1500; SET lock_timeout = 1000; SET idle_in_transaction_session_timeout = 10000; "
        );
        assert_eq!(limits.local_settings()[0], "set_config('statement_timeout', '1500', true)");
    }
}

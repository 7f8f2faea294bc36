//! Which certificates are trusted (`sslrootcert`), and how a server's certificate is checked:
//! not at all for `prefer` and `require` without roots ([`Unverified`]), up to a trusted root
//! for `verify-ca` ([`ChainOnly`]); `verify-full` is rustls's own verifier.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::TlsSettingError;

/// The roots `sslrootcert` names: `system`, or a PEM file.
pub(super) fn load_roots(roots: &str) -> Result<Arc<RootCertStore>, TlsSettingError> {
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

/// The handshake's signatures, checked with the provider's algorithms; `lenient`: accepted when
/// the certificate cannot be read (see [`Unverified`]).
#[derive(Debug)]
pub(super) struct Signatures {
    pub(super) provider: Arc<rustls::crypto::CryptoProvider>,
    pub(super) lenient: bool,
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
pub(super) struct Unverified(pub(super) Signatures);

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
pub(super) struct ChainOnly {
    pub(super) roots: Arc<RootCertStore>,
    pub(super) signatures: Signatures,
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

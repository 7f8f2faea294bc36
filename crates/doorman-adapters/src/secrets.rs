//! Secrets at rest: AES-256-GCM with `ring::aead`.
//!
//! A value is sealed with the first configured key and stored as
//! `v1:<key id>:<base64 of nonce ‖ ciphertext ‖ tag>`, with a fresh random 96-bit nonce each
//! time. The associated data names the tenant and the column the value belongs to, so a
//! ciphertext copied into another row or column does not open. Any configured key opens what
//! it sealed, which is how keys rotate: add a new key first, `doorman secrets rotate`, then
//! remove the old one.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use doorman_domain::TenantId;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use thiserror::Error;

const FORMAT: &str = "v1";

/// Where a sealed value lives: it opens only there.
#[derive(Debug, Clone, Copy)]
pub struct SealedIn {
    pub tenant: TenantId,
    /// `table.column`, e.g. `agent_bridges.signing_secret`.
    pub column: &'static str,
}

impl SealedIn {
    fn associated_data(&self) -> String {
        format!("doorman:{}:{}", self.column, self.tenant)
    }
}

/// The configured encryption keys; the first seals. Never prints a key.
pub struct Keyring {
    keys: Vec<(String, LessSafeKey)>,
    random: SystemRandom,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("ids", &self.ids().collect::<Vec<_>>()).finish()
    }
}

/// `DOORMAN_ENCRYPTION_KEYS` could not be read. Never quotes a key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyringError {
    #[error(
        "no encryption key is configured (DOORMAN_ENCRYPTION_KEYS: comma-separated id:base64 of 32 bytes)"
    )]
    Empty,
    #[error("encryption key #{0} is not `id:base64` (the id: 1 to 32 letters, digits, `-` or `_`)")]
    Malformed(usize),
    #[error("encryption key {0:?} is not base64 of exactly 32 bytes")]
    WrongLength(String),
    #[error("encryption key id {0:?} is configured twice")]
    DuplicateId(String),
}

/// A stored value could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpenError {
    #[error("the value is not sealed (stored before encryption; run `doorman secrets rotate`)")]
    NotSealed,
    #[error("the value is sealed with key {0:?}, which is not configured")]
    UnknownKey(String),
    #[error("the value does not open: altered, or copied from another row")]
    Corrupt,
}

impl Keyring {
    /// Reads `id:base64,id:base64…`; the first key seals.
    pub fn parse(spec: &str) -> Result<Self, KeyringError> {
        let mut keys: Vec<(String, LessSafeKey)> = Vec::new();
        for (i, entry) in spec.split(',').map(str::trim).filter(|e| !e.is_empty()).enumerate() {
            let (id, encoded) = entry.split_once(':').ok_or(KeyringError::Malformed(i + 1))?;
            if !valid_id(id) {
                return Err(KeyringError::Malformed(i + 1));
            }
            let bytes = STANDARD.decode(encoded).map_err(|_| KeyringError::WrongLength(id.to_owned()))?;
            let key = UnboundKey::new(&AES_256_GCM, &bytes)
                .map_err(|_| KeyringError::WrongLength(id.to_owned()))?;
            if keys.iter().any(|(known, _)| known == id) {
                return Err(KeyringError::DuplicateId(id.to_owned()));
            }
            keys.push((id.to_owned(), LessSafeKey::new(key)));
        }
        if keys.is_empty() {
            return Err(KeyringError::Empty);
        }
        Ok(Self { keys, random: SystemRandom::new() })
    }

    /// The key that seals.
    pub fn current(&self) -> &str {
        &self.keys[0].0
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(id, _)| id.as_str())
    }

    pub fn has(&self, id: &str) -> bool {
        self.keys.iter().any(|(known, _)| known == id)
    }

    /// Seals `plaintext` for `place` with the current key.
    pub fn seal(&self, plaintext: &[u8], place: SealedIn) -> String {
        let (id, key) = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        // The system's random source failing is not something to carry on from.
        self.random.fill(&mut nonce).expect("the system random number generator works");
        let mut sealed = plaintext.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(place.associated_data().as_bytes()),
            &mut sealed,
        )
        .expect("AES-GCM seals any length a secret has");
        let mut stored = nonce.to_vec();
        stored.extend_from_slice(&sealed);
        format!("{FORMAT}:{id}:{}", STANDARD.encode(stored))
    }

    /// Opens a value sealed for `place` with any configured key.
    pub fn open(&self, stored: &str, place: SealedIn) -> Result<Vec<u8>, OpenError> {
        let Some((id, encoded)) = sealed_parts(stored) else { return Err(OpenError::NotSealed) };
        let (_, key) = self
            .keys
            .iter()
            .find(|(known, _)| known == id)
            .ok_or_else(|| OpenError::UnknownKey(id.to_owned()))?;
        let bytes = STANDARD.decode(encoded).map_err(|_| OpenError::Corrupt)?;
        if bytes.len() < NONCE_LEN {
            return Err(OpenError::Corrupt);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| OpenError::Corrupt)?;
        let mut buffer = sealed.to_vec();
        let plaintext = key
            .open_in_place(nonce, Aad::from(place.associated_data().as_bytes()), &mut buffer)
            .map_err(|_| OpenError::Corrupt)?;
        Ok(plaintext.to_vec())
    }

    /// Whether `stored` is sealed with the current key (nothing for a rotation to do).
    pub fn is_current(&self, stored: &str) -> bool {
        sealed_parts(stored).is_some_and(|(id, _)| id == self.current())
    }
}

/// The key id a stored value names, if it is sealed at all.
pub fn key_id_of(stored: &str) -> Option<&str> {
    sealed_parts(stored).map(|(id, _)| id)
}

fn sealed_parts(stored: &str) -> Option<(&str, &str)> {
    let rest = stored.strip_prefix(FORMAT)?.strip_prefix(':')?;
    let (id, encoded) = rest.split_once(':')?;
    valid_id(id).then_some((id, encoded))
}

fn valid_id(id: &str) -> bool {
    (1..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh unguessable token for a URL or a cookie: 32 random bytes, base64url without padding.
pub fn random_token() -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes).expect("the system random number generator works");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What is stored of a token that is handed out (install links, OAuth states, browser
/// cookies): its SHA-256 in hex, so reading the table does not yield a usable token.
pub fn token_hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "a:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const B: &str = "b:HxcYGRobHB0eHxAREhMUFRYXAAECAwQFBgcICQoLDA0=";

    fn place(tenant: TenantId) -> SealedIn {
        SealedIn { tenant, column: "agent_bridges.signing_secret" }
    }

    #[test]
    fn a_sealed_value_opens_where_it_was_sealed_and_nowhere_else() {
        let keys = Keyring::parse(A).unwrap();
        let (t1, t2) = (TenantId::generate(), TenantId::generate());
        let sealed = keys.seal(b"whsec_secret", place(t1));
        assert!(sealed.starts_with("v1:a:"));
        assert!(!sealed.contains("whsec_secret"));
        assert_eq!(keys.open(&sealed, place(t1)).unwrap(), b"whsec_secret");
        assert_eq!(keys.open(&sealed, place(t2)), Err(OpenError::Corrupt), "another tenant's row");
        let other_column = SealedIn { tenant: t1, column: "installations.bot_token" };
        assert_eq!(keys.open(&sealed, other_column), Err(OpenError::Corrupt), "another column");
        assert_ne!(keys.seal(b"whsec_secret", place(t1)), sealed, "a fresh nonce each time");
    }

    #[test]
    fn any_configured_key_opens_and_the_first_seals() {
        let tenant = TenantId::generate();
        let old = Keyring::parse(A).unwrap();
        let sealed_with_a = old.seal(b"x", place(tenant));
        let rotated = Keyring::parse(&format!("{B},{A}")).unwrap();
        assert_eq!(rotated.open(&sealed_with_a, place(tenant)).unwrap(), b"x");
        assert!(!rotated.is_current(&sealed_with_a));
        assert!(rotated.seal(b"x", place(tenant)).starts_with("v1:b:"));
        let without_a = Keyring::parse(B).unwrap();
        assert_eq!(without_a.open(&sealed_with_a, place(tenant)), Err(OpenError::UnknownKey("a".into())));
        assert_eq!(without_a.open("whsec_plain", place(tenant)), Err(OpenError::NotSealed));
        assert_eq!(key_id_of(&sealed_with_a), Some("a"));
    }

    #[test]
    fn bad_key_specs_are_refused_without_quoting_a_key() {
        assert_eq!(Keyring::parse(" , ").unwrap_err(), KeyringError::Empty);
        assert_eq!(Keyring::parse("nokey").unwrap_err(), KeyringError::Malformed(1));
        assert_eq!(Keyring::parse("a:c2hvcnQ=").unwrap_err(), KeyringError::WrongLength("a".into()));
        assert_eq!(Keyring::parse(&format!("{A},{A}")).unwrap_err(), KeyringError::DuplicateId("a".into()));
        let error = Keyring::parse("a:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd").unwrap_err().to_string();
        assert!(!error.contains("AAECAw"), "{error}");
        assert!(!format!("{:?}", Keyring::parse(A).unwrap()).contains("AAECAw"));
    }

    #[test]
    fn handed_out_tokens_are_random_and_stored_only_as_their_hash() {
        let (a, b) = (random_token(), random_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43, "32 bytes, base64url without padding");
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{a}");
        assert_eq!(token_hash(&a), token_hash(&a));
        assert_ne!(token_hash(&a), token_hash(&b));
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}

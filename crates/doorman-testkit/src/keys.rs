//! The encryption keys tests seal secrets with.

use doorman_adapters::secrets::Keyring;

/// As `DOORMAN_ENCRYPTION_KEYS` holds them.
pub const TEST_KEYS: &str = "test:a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=";

pub fn test_keys() -> Keyring {
    Keyring::parse(TEST_KEYS).expect("the test keys parse")
}

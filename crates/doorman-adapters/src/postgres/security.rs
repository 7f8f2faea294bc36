//! The closed list of SECURITY DEFINER functions.
//!
//! Such a function runs as its owner and so bypasses row-level security. Doorman needs
//! exactly one: the workspace → tenant lookup, which runs before a tenant is known. A test
//! compares the database's SECURITY DEFINER functions with this list; adding one to a
//! migration without adding it here (and arguing for it in review) fails the test.

/// Sorted by name, as the test lists them.
/// - `doorman_resolve_workspace`: workspace → tenant, before any tenant is known.
/// - `doorman_secret_key_ids`: which encryption keys stored secrets use (ids and counts, never
///   a secret), so a starting server can refuse to run without one.
pub const SECURITY_DEFINER_ALLOWLIST: &[&str] = &["doorman_resolve_workspace", "doorman_secret_key_ids"];

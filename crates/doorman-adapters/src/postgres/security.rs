//! The closed list of SECURITY DEFINER functions.
//!
//! Such a function runs as its owner and so bypasses row-level security. Doorman needs
//! exactly one: the workspace → tenant lookup, which runs before a tenant is known. A test
//! compares the database's SECURITY DEFINER functions with this list; adding one to a
//! migration without adding it here (and arguing for it in review) fails the test.

pub const SECURITY_DEFINER_ALLOWLIST: &[&str] = &["doorman_resolve_workspace"];

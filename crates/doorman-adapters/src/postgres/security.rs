//! The closed list of SECURITY DEFINER functions.
//!
//! Such a function runs as its owner and so bypasses row-level security. Doorman keeps
//! them few and narrow, each argued for below and in decision 15. A test
//! compares the database's SECURITY DEFINER functions with this list; adding one to a
//! migration without adding it here (and arguing for it in review) fails the test.

/// Sorted by name, as the test lists them.
/// - `doorman_disable_failing_agents`: pauses, across tenants, the agents failing for longer than
///   the setting, and audits each as Doorman's own; it returns which.
/// - `doorman_resolve_workspace`: workspace → tenant, before any tenant is known (with what
///   the delivery says of its installation: decision 20).
/// - `doorman_link_taken`: whether a new link would take deliveries another tenant's link
///   receives (decision 20); it answers yes or no.
/// - `doorman_secret_key_ids`: which encryption keys stored secrets use (ids and counts, never
///   a secret), so a starting server can refuse to run without one.
/// - `doorman_install_link`: an install link's tenant, for the one token the caller holds.
/// - `doorman_take_install_state`: checks and consumes an OAuth state, before a tenant is known.
/// - `doorman_record_installation`, `doorman_remove_installation`: the server's only ways to
///   link and unlink a workspace (it cannot write the directory itself), each for one tenant.
/// - `doorman_receipt_counts`: every tenant's stranded and recently failed receipts, as two
///   numbers, for the server's gauges.
/// - `doorman_redelivery_tenants`: which tenants have redelivery on (and an agent not paused),
///   with their schedules, for the redelivery runner (ADR 26); ids and delays, nothing else.
/// - `doorman_sweep_receipts`: marks, across tenants, the receipts that had no outcome when it
///   looked, so the stranded are found through an index (decision 18); it returns a count.
/// - `doorman_sweep_watermark`: how far the sweep has looked (a timestamp), for a claim
///   inserted behind it.
pub const SECURITY_DEFINER_ALLOWLIST: &[&str] = &[
    "doorman_disable_failing_agents",
    "doorman_install_link",
    "doorman_link_taken",
    "doorman_receipt_counts",
    "doorman_record_installation",
    "doorman_redelivery_tenants",
    "doorman_remove_installation",
    "doorman_resolve_workspace",
    "doorman_resolve_workspace",
    "doorman_secret_key_ids",
    "doorman_sweep_receipts",
    "doorman_sweep_watermark",
    "doorman_take_install_state",
];

//! Doorman on a Citus coordinator (ADR 22): after the migrations, `doorman migrate` distributes
//! the receipts, kept payloads and request fingerprints by tenant ([`DISTRIBUTE`]) and replaces
//! the hot path's batch functions with ones whose statements Citus routes ([`ROUTED`]) when the
//! database has the `citus` extension. On one PostgreSQL nothing here runs.

use diesel::connection::SimpleConnection;
use diesel::sql_types::Bool;

use super::migrations::{MigrationError, SyncPg};

/// The idempotent script that puts Doorman's tables where ADR 22 says they belong.
pub const DISTRIBUTE: &str = include_str!("citus.sql");

/// The idempotent script that gives Citus its own forms of the hot path's functions (ADR 22):
/// the claim, fingerprint and outcome batches as one routed statement per event, the settle
/// pruned to its tenants' shards, tenants named with `SET LOCAL`. Run after [`DISTRIBUTE`], in
/// a transaction of its own (Citus will not propagate a function in the one that distributed a
/// table).
pub const ROUTED: &str = include_str!("citus_routed.sql");

/// The tables distributed by `tenant_id`, co-located with the first.
pub const DISTRIBUTED: [&str; 3] =
    ["messaging_event_receipts", "messaging_event_payloads", "messaging_request_replays"];

/// Whether the database has the `citus` extension (a Citus coordinator, or a node of one).
pub fn is_citus(conn: &mut SyncPg) -> Result<bool, MigrationError> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = Bool)]
        found: bool,
    }
    let found: Found = diesel::RunQueryDsl::get_result(
        diesel::sql_query("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS found"),
        conn,
    )
    .map_err(MigrationError::failed)?;
    Ok(found.found)
}

/// On a Citus database, runs [`DISTRIBUTE`] then [`ROUTED`] (again, harmlessly, when they have
/// run before) and says so; elsewhere does nothing. Returns whether it ran.
pub fn distribute_if_citus(conn: &mut SyncPg) -> Result<bool, MigrationError> {
    if !is_citus(conn)? {
        return Ok(false);
    }
    conn.batch_execute(DISTRIBUTE)
        .map_err(|error| MigrationError::Failed(format!("distributing the receipts on Citus: {error}")))?;
    conn.batch_execute(ROUTED).map_err(|error| {
        MigrationError::Failed(format!("defining the routed batch functions on Citus: {error}"))
    })?;
    tracing::info!(tables = ?DISTRIBUTED, "Citus: receipts, payloads and request fingerprints distributed by tenant, batches routed per event");
    Ok(true)
}

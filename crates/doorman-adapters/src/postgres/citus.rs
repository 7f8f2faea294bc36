//! Doorman on a Citus coordinator (ADR 22): after the migrations and the SQL definitions in
//! their Citus form ([`super::definitions`], ADR 23), `doorman migrate` distributes the receipts,
//! kept payloads, request fingerprints and attempts by tenant ([`DISTRIBUTE`]) when the database has the
//! `citus` extension. On one PostgreSQL nothing here runs.

use diesel::connection::SimpleConnection;
use diesel::sql_types::Bool;

use super::sync_pg::{MigrationError, SyncPg};

/// The idempotent script that puts Doorman's tables where ADR 22 says they belong.
pub const DISTRIBUTE: &str = include_str!("citus.sql");

/// The tables distributed by `tenant_id`, co-located with the first.
pub const DISTRIBUTED: [&str; 4] = [
    "messaging_event_receipts",
    "messaging_event_payloads",
    "messaging_request_replays",
    "messaging_event_attempts",
];

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

/// Runs [`DISTRIBUTE`] (again, harmlessly, when it has run before) and says so. The policies of
/// the tables it distributes must be in their Citus form first (Citus refuses a subquery in a
/// distributed table's policy): [`super::definitions::apply`] with
/// [`Form::Citus`](super::definitions::Form::Citus) gives them that.
pub fn distribute(conn: &mut SyncPg) -> Result<(), MigrationError> {
    conn.batch_execute(DISTRIBUTE)
        .map_err(|error| MigrationError::Failed(format!("distributing the receipts on Citus: {error}")))?;
    tracing::info!(tables = ?DISTRIBUTED, "Citus: receipts, payloads, request fingerprints and attempts distributed by tenant, batches routed per event");
    Ok(())
}

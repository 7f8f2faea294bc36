//! PostgreSQL persistence.
//!
//! Two kinds of connection, never mixed:
//! - the **server pool** ([`pool::connect`]): every connection switches to the `doorman_app`
//!   role when it opens, so row-level security applies even when the login user owns the
//!   tables; each transaction names its tenant with `SET LOCAL app.tenant_id`
//!   (`doorman_set_local`, inside the hot-path SQL functions; on Citus it reaches the workers
//!   too), which ends with the transaction and so never leaks from one request into the next;
//! - the **admin pool** ([`pool::connect_as`] with `doorman_admin`) for the admin API's
//!   operator actions ([`admin`]), under row-level security like the server's;
//! - **owner connections** for migrations, the command line's operator actions ([`admin`]
//!   again, on an owner pool) and maintenance ([`maintenance`]), which act across tenants on
//!   purpose.
//!
//! Library errors become the domain's [`StorageError`](doorman_domain::StorageError) in
//! [`errors`]; nothing here panics on a database failure.

pub mod activity;
pub mod admin;
pub mod agent_health;
pub mod citus;
pub mod claims;
pub mod connect;
mod cycle;
pub mod definitions;
pub mod directory;
pub mod errors;
pub mod group_commit;
pub mod installations;
pub mod listener;
pub mod login;
pub mod maintenance;
pub mod migrations;
pub mod operational;
mod outcomes;
mod placements;
pub mod pool;
mod receipt_row;
pub mod receipts;
pub mod redeliveries;
pub mod schema;
pub mod security;
mod statement;
pub mod stored_events;
pub mod sync_pg;

pub use activity::PgActivity;
pub use admin::{
    PgAdminKeys, PgAgents, PgAuditTrail, PgConsoleSessions, PgInstallRecords, PgLedger, PgOperatorPorts,
    PgReplayJobs, PgTenants, PgWorkspaces, SessionSecret,
};
pub use agent_health::PgAgentHealth;
pub use claims::ClaimTimeouts;
pub use directory::PgTenantDirectory;
pub use group_commit::GroupSettings;
pub use installations::{PgInstallStore, PgInstallations};
pub use maintenance::PgMaintenance;
pub use operational::{AfterFailure, OperationalMessage, PgOperationalOutbox};
pub use pool::{CitusWrites, PgPool, PoolSettings};
pub use receipts::PgReceiptStore;
pub use redeliveries::PgRedeliveries;
pub use stored_events::PgStoredEvents;

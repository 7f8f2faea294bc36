//! Test support for Doorman's crates and its load generator.
//!
//! None of this is in the `doorman` binary: the other crates take this one as a
//! dev-dependency, and only `doorman-loadgen` as a normal one (`just check-hexagon` proves
//! `doorman-app`'s normal dependency tree does not contain it).
//!
//! - [`citus`]: a Citus coordinator and two workers of a test's own, receipts distributed.
//! - [`cluster`]: a primary and a streaming standby of a test's own, for failover tests.
//! - [`database`]: a fresh PostgreSQL database per test, cloned from a migrated template.
//! - [`definitions`]: whether a migrated database holds exactly what the SQL definitions' files say.
//! - [`migrations`]: reverting and listing migrations, for tests of the down scripts.
//! - [`operator`]: the operator use cases as the command line runs them, for setting up tests.
//! - [`pgbouncer`]: PgBouncer in transaction pooling mode before the test server.
//! - [`schema`]: the schema as one normalised text (`pg_dump --schema-only`).
//! - [`server`]: a PostgreSQL server of a test's own (`initdb`, a free port, TLS on request).
//! - [`fake_agent`]: a real HTTP agent on loopback that verifies Standard Webhooks signatures.
//! - [`fake_slack`]: Slack's authorize page and `oauth.v2.access`, for install tests.
//! - [`fault_proxy`]: a TCP proxy that delays, refuses or cuts connections on command.
//! - [`serve_process`]: the `doorman` binary as a child process, its logs kept per process.
//! - [`slack`]: requests signed as Slack signs them.

mod as_postgres;
pub mod citus;
pub mod cluster;
pub mod database;
pub mod definitions;
pub mod fake_agent;
pub mod fake_slack;
pub mod fault_proxy;
pub mod keys;
pub mod migrations;
pub mod operator;
pub mod pgbouncer;
pub mod schema;
pub mod serve_process;
pub mod server;
pub mod slack;

pub use database::TestDatabase;
pub use fake_agent::FakeAgent;
pub use fake_slack::FakeSlack;
pub use fault_proxy::FaultProxy;
pub use serve_process::ServeProcess;

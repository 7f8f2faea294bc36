//! Doorman's adapters: the domain's ports implemented against real systems.
//!
//! - [`postgres`]: tenants, workspaces, agent bridges and receipts in PostgreSQL (Diesel,
//!   diesel-async, bb8), with row-level security doing the tenant isolation.
//! - [`slack`]: request signature verification (ring) and parsing of events, slash commands
//!   and interactions into domain events.
//! - [`notified_directory`]: the directory served from memory, kept true by notices from
//!   the database (`postgres::listener`), bypassed whenever no listener is subscribed.
//! - [`bridge`]: the HTTP agent bridge (Standard Webhooks signed dispatches, per-tenant
//!   circuit breaker, bounded work in flight, allowed destinations).
//! - [`secrets`]: secrets at rest, sealed with AES-256-GCM under the configured keys.
//! - [`outbound`]: how outbound HTTP clients are built, and their one error type.

pub mod bridge;
pub mod notified_directory;
pub mod outbound;
pub mod postgres;
pub mod secrets;
pub mod slack;

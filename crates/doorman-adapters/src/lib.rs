//! Doorman's adapters: the domain's ports implemented against real systems.
//!
//! - [`postgres`]: tenants, workspaces, agent bridges and receipts in PostgreSQL (Diesel,
//!   diesel-async, bb8), with row-level security doing the tenant isolation.
//! - [`slack`]: request signature verification (ring) and parsing of events, slash commands
//!   and interactions into domain events.
//! - [`directory_cache`]: an opt-in short cache in front of the tenant directory.
//! - [`bridge`]: the HTTP agent bridge (Standard Webhooks signed dispatches, per-tenant
//!   circuit breaker).

pub mod bridge;
pub mod directory_cache;
pub mod postgres;
pub mod slack;

//! Adapter tests against real systems: a fresh PostgreSQL database per test.

mod fixtures;
mod pg_admin;
mod pg_claims;
mod pg_completion;
mod pg_directory;
mod pg_isolation;
mod pg_schema;

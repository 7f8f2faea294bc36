//! Adapter tests against real systems: a fresh PostgreSQL database per test.

mod bridge_client;
mod bridge_http;
mod bridge_operational;
mod fixtures;
mod pg_activity;
mod pg_admin;
mod pg_agent_health;
mod pg_claims;
mod pg_completion;
mod pg_console;
mod pg_definitions;
mod pg_directory;
mod pg_errors;
mod pg_installations;
mod pg_isolation;
mod pg_operational;
mod pg_redelivery;
mod pg_replay;
mod pg_schema;
mod pg_tls;
mod slack_fixtures;
mod slack_oauth;
mod slack_properties;
mod slack_verify;

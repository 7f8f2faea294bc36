//! End to end: a real server on a random port, a fresh real database, a fake agent that
//! verifies Standard Webhooks signatures, and requests signed as Slack signs them.

mod activity;
mod admin_api;
mod agent_disable;
mod bad_input;
mod browser;
mod citus;
mod cli;
mod console;
mod database_tls;
mod deploy;
mod directory;
mod failover;
mod faults;
mod hardening;
mod helpers;
mod install;
mod operational;
mod org_wide;
mod pooler;
mod processes;
mod protocol;
mod redelivery;
mod replay;
mod rolling_deploy;
mod security;
mod seed_cases;
mod startup;

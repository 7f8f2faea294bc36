//! The command line, `doorman`: what it takes ([`args`]: every setting a flag with an
//! environment variable behind it; the README lists them with their defaults) and what each
//! command does ([`commands`]). `doorman serve` and `doorman admin serve` start the other faces
//! through their front doors (`crate::slack`, `crate::operator`); the operator commands are
//! the command line's face of the operator use cases.

pub mod args;
pub mod commands;
pub mod settings;

use clap::{Parser, Subcommand, ValueEnum};

pub use self::args::*;
pub use self::commands::{Unsuccessful, run};

#[derive(Debug, Parser)]
#[command(
    name = "doorman",
    version,
    about = "Verifies, deduplicates and dispatches Slack events to tenants' agents"
)]
pub struct Cli {
    /// Log output: `pretty` for a terminal, `json` for a log pipeline. Levels: RUST_LOG.
    #[arg(long, env = "DOORMAN_LOG_FORMAT", value_enum, default_value_t = LogFormat::Pretty, global = true)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve Slack's requests (POST /slack/events, /slack/commands, /slack/interactions).
    Serve(Box<ServeArgs>),
    /// Apply pending database migrations (as the connecting user, who owns the tables).
    Migrate(DatabaseArgs),
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Link Slack workspaces to tenants.
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Configure, pause and resume tenants' agents.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Inspect and prune event receipts.
    #[command(subcommand)]
    Receipts(ReceiptsCommand),
    /// Manage secrets at rest.
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Install the Slack app into customers' workspaces, list and remove installations.
    #[command(subcommand)]
    Slack(SlackCommand),
    /// The admin API: serve it, manage its keys, read the audit trail.
    #[command(subcommand)]
    Admin(AdminCommand),
}

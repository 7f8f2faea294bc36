//! The command line. Every setting is a flag with an environment variable behind it; the
//! README lists them with their defaults.

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Apply pending database migrations (as the connecting user, who owns the tables).
    Migrate(DatabaseArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL connection URL.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/doorman",
        hide_env_values = true
    )]
    pub database_url: String,
}

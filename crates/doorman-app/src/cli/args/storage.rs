//! What a command connects to the database with and opens secrets at rest with, and
//! `doorman secrets`. Secret values are hidden from `--help` and from `Debug`.

use clap::{Args, Subcommand, ValueEnum};

pub use crate::config::Secret;

#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL connection URL.
    #[arg(
        long = "database-url",
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/doorman",
        hide_env_values = true,
        hide_default_value = false
    )]
    pub database_url: Secret,
}

/// The keys secrets are sealed with at rest.
#[derive(Debug, Clone, Args)]
pub struct KeysArgs {
    /// Encryption keys for secrets at rest: comma-separated `id:base64(32 bytes)`; the first
    /// seals, all open (add a new key first, `doorman secrets rotate`, then drop the old).
    #[arg(long = "encryption-keys", env = "DOORMAN_ENCRYPTION_KEYS", hide_env_values = true)]
    pub encryption_keys: Option<Secret>,
}

/// `DOORMAN_DB_POOL_MODE`: what stands between Doorman and PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DbPoolMode {
    /// Nothing, or a pooler in session mode.
    Session,
    /// A pooler in transaction mode.
    Transaction,
}

/// `DOORMAN_CITUS_WRITES`: where a tenant's claims and outcomes are written on Citus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CitusWritesArg {
    /// On the node that holds the tenant's shards (ADR 24).
    Node,
    /// Through the coordinator.
    Coordinator,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Seal every stored secret with the first of DOORMAN_ENCRYPTION_KEYS (those sealed with
    /// another key, and any stored before encryption), in batches; safe to stop and re-run.
    Rotate {
        #[arg(long, default_value_t = 100)]
        batch: u32,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        keys: KeysArgs,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

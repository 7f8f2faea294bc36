//! `doorman receipts`: what became of events, replays, pruning.

use clap::{Args, Subcommand};
use doorman_domain::{ReceiptStatus, Retention};

use super::{DatabaseArgs, DispatchArgs, KeysArgs};

#[derive(Debug, Subcommand)]
pub enum ReceiptsCommand {
    /// Events acknowledged to Slack that reached nobody: claimed, never handled, no failure.
    Stranded {
        #[arg(long, default_value_t = ReceiptStatus::STRANDED_AFTER.into())]
        older_than: humantime::Duration,
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Events whose dispatch failed.
    Failed {
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// What happened to one event: handled, failed, in flight, stranded, or unknown (exit 1);
    /// each dispatch, and the request Doorman sends the tenant's agent for it (to the agent as
    /// it is set now, the signature redacted). Its kept payload only with `--payload`.
    Show {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        event_id: String,
        /// Unfinished for longer than this: stranded.
        #[arg(long, default_value_t = ReceiptStatus::STRANDED_AFTER.into())]
        older_than: humantime::Duration,
        /// Also print the event's kept payload: the customer's message as Slack sent it, its
        /// verification token redacted. The command line runs as the database's owner, who may
        /// read every tenant's payloads (an admin API key needs `read_payloads`), so it is
        /// printed only when asked; opening it needs DOORMAN_ENCRYPTION_KEYS.
        #[arg(long)]
        payload: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(flatten)]
        keys: KeysArgs,
    },
    /// Find an event by its whole id in every tenant (its tenant unknown): each tenant's, with
    /// its status. Exit 1 when no tenant has it.
    Find {
        #[arg(long)]
        event_id: String,
        /// Unfinished for longer than this: stranded.
        #[arg(long, default_value_t = ReceiptStatus::STRANDED_AFTER.into())]
        older_than: humantime::Duration,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Send kept events to the tenant's agent again (same `webhook-id`, `delivery.replay`),
    /// one at a time through the same bridge as `serve`. Refuses handled events and events
    /// whose payload was not kept. Exit 1 unless every selected event was handled.
    Replay(Box<ReplayArgs>),
    /// Where each tenant's receipts are (on Citus, the node and shard) and how many events it
    /// had in the last hour and day, the busiest first: what spreading tenants by their load
    /// starts from (docs/operations.md, "Placing tenants").
    Placement {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Delete every tenant's receipts older than the retention, in bounded batches.
    Prune {
        #[arg(long, env = "DOORMAN_RECEIPT_RETENTION", default_value_t = Retention::DEFAULT_KEEP_FOR.into())]
        retention: humantime::Duration,
        #[arg(long, default_value_t = 1000)]
        batch: u32,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

/// `doorman receipts replay`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["event_id", "failed_since", "stranded"])))]
pub struct ReplayArgs {
    #[arg(long)]
    pub tenant: String,
    /// One event.
    #[arg(long)]
    pub event_id: Option<String>,
    /// Every unhandled event whose dispatch failed within this long (e.g. 1h).
    #[arg(long)]
    pub failed_since: Option<humantime::Duration>,
    /// Every stranded event (unfinished for longer than --older-than).
    #[arg(long)]
    pub stranded: bool,
    #[arg(long, default_value_t = ReceiptStatus::STRANDED_AFTER.into())]
    pub older_than: humantime::Duration,
    /// Say what would be replayed; send and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
    /// Log in as a member of `doorman_admin` (the tables' owner is one): a replay runs as the
    /// admin API's does, under row-level security for the one tenant.
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[command(flatten)]
    pub dispatch: DispatchArgs,
}

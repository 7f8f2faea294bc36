//! `doorman serve`'s settings, and how events are dispatched to agents (which `receipts
//! replay` and `admin serve` share with it).

use std::net::SocketAddr;

use clap::Args;
use doorman_adapters::slack::DEFAULT_WINDOW;
use doorman_domain::Retention;

use super::{CitusWritesArg, DatabaseArgs, DbPoolMode, KeysArgs, Secret};

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,

    /// Address to listen on.
    #[arg(long, env = "DOORMAN_BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,

    /// Where `GET /metrics` answers: an address of its own, loopback by default (never the
    /// Slack-facing listener).
    #[arg(long, env = "DOORMAN_METRICS_BIND", default_value = "127.0.0.1:9300")]
    pub metrics_bind: SocketAddr,

    /// Slack signing secret(s), comma-separated; several at once during a rotation.
    #[arg(
        long,
        env = "SLACK_SIGNING_SECRET",
        hide_env_values = true,
        value_delimiter = ',',
        required = true
    )]
    pub slack_signing_secret: Vec<Secret>,

    /// How far a request's timestamp may be from now, either way.
    #[arg(long, env = "DOORMAN_SIGNATURE_WINDOW", default_value_t = DEFAULT_WINDOW.into())]
    pub signature_window: humantime::Duration,

    /// Largest request body accepted; larger ones get 413 without being read.
    #[arg(long, env = "DOORMAN_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// On SIGTERM/SIGINT, how long in-flight dispatches may finish before the process exits.
    #[arg(long, env = "DOORMAN_DRAIN_TIMEOUT", default_value = "30s")]
    pub drain_timeout: humantime::Duration,

    /// Most database connections for acknowledging deliveries (resolves, and the claims
    /// writer: claims and fingerprints).
    #[arg(long, env = "DOORMAN_DB_POOL_SIZE", default_value_t = 8)]
    pub db_pool_size: u32,

    /// Most database connections for work after the answer (the outcomes writer: completions
    /// and failures; token refreshes, uninstalls, the gauges' counts).
    #[arg(long, env = "DOORMAN_DB_BACKGROUND_POOL_SIZE", default_value_t = 4)]
    pub db_background_pool_size: u32,

    /// How long a request waits for a database connection to resolve its workspace before it
    /// is answered 503. At most 1250ms: with the claim's own 1.5 s (its connection wait, its
    /// commit, and settling it after a lost connection), inside Slack's 3 s.
    #[arg(long, env = "DOORMAN_DB_ACQUIRE_TIMEOUT", default_value = "1s")]
    pub db_acquire_timeout: humantime::Duration,

    /// How DATABASE_URL reaches PostgreSQL: `session` (directly, or through a pooler in
    /// session mode) or `transaction` (through a pooler in transaction mode, such as
    /// PgBouncer's `pool_mode = transaction`: every unit of work is a transaction of its own,
    /// and no prepared statement is kept). `transaction` needs DOORMAN_LISTEN_DATABASE_URL.
    #[arg(long, env = "DOORMAN_DB_POOL_MODE", value_enum, default_value = "session")]
    pub db_pool_mode: DbPoolMode,

    /// On Citus, where a tenant's claims and outcomes are written: `node` (on the node that
    /// holds its shards, connecting to it at the address `pg_dist_node` gives, with
    /// DATABASE_URL's login, database and parameters) or `coordinator` (through it, for
    /// workers Doorman's hosts may not reach). Ignored on one PostgreSQL.
    #[arg(long, env = "DOORMAN_CITUS_WRITES", value_enum, default_value = "node")]
    pub citus_writes: CitusWritesArg,

    /// Where the directory's listener connects (`LISTEN` needs a session of its own): directly
    /// to PostgreSQL, or through a pooler in session mode. Default: DATABASE_URL.
    #[arg(long, env = "DOORMAN_LISTEN_DATABASE_URL", hide_env_values = true)]
    pub listen_database_url: Option<Secret>,

    /// HTTP worker threads (0: one per CPU).
    #[arg(long, env = "DOORMAN_WORKERS", default_value_t = 0)]
    pub workers: usize,

    /// How long a request body may take to arrive; past it, 408 and the connection closes.
    #[arg(long, env = "DOORMAN_BODY_READ_TIMEOUT", default_value = "5s")]
    pub body_read_timeout: humantime::Duration,

    /// How dispatches are made (shared with `receipts replay`).
    #[command(flatten)]
    pub dispatch: DispatchArgs,

    #[command(flatten)]
    pub redelivery: RedeliveryArgs,

    /// An agent whose every delivery has failed for this long (its circuit open, with no
    /// success since) is disabled: paused by Doorman, audited, until an operator resumes it.
    /// `0s`: never.
    #[arg(long, env = "DOORMAN_AGENT_DISABLE_AFTER", default_value = "5days")]
    pub agent_disable_after: humantime::Duration,

    #[command(flatten)]
    pub operational_webhook: OperationalWebhookArgs,
}

/// The operational webhook (issue 41): one receiver for the deployment, told of events whose
/// redeliveries are spent, agents disabled, and circuits opened and closed. Both settings or
/// neither; without them nothing is recorded or sent.
#[derive(Debug, Clone, Args)]
pub struct OperationalWebhookArgs {
    /// Where operational events are sent (https to a public address, as agents'; the same
    /// DOORMAN_AGENT_ALLOW_PRIVATE lifts that). Needs DOORMAN_OPERATIONAL_WEBHOOK_SECRET.
    #[arg(long, env = "DOORMAN_OPERATIONAL_WEBHOOK_URL")]
    pub operational_webhook_url: Option<String>,

    /// The `whsec_…` secret operational events are signed with (Standard Webhooks).
    #[arg(long, env = "DOORMAN_OPERATIONAL_WEBHOOK_SECRET", hide_env_values = true)]
    pub operational_webhook_secret: Option<Secret>,

    /// The delays before each retry of an operational event (docs/operations.md; for tests).
    #[arg(long, env = "DOORMAN_OPERATIONAL_WEBHOOK_SCHEDULE", default_value = "standard", hide = true)]
    pub operational_webhook_schedule: String,
}

/// The redelivery runner (ADR 26): for tenants that turned redelivery on, each serving process
/// sends their failed and stranded events again on the tenant's schedule.
#[derive(Debug, Clone, Args)]
pub struct RedeliveryArgs {
    /// How often this process looks for events due a redelivery (sooner while a backlog drains).
    #[arg(long, env = "DOORMAN_REDELIVERY_EVERY", default_value = "1s")]
    pub redelivery_every: humantime::Duration,

    /// Redeliveries in flight in this process at once (0: this process sends none). Live
    /// deliveries have bounds of their own and go first.
    #[arg(long, env = "DOORMAN_REDELIVERY_IN_FLIGHT", default_value_t = 32)]
    pub redelivery_in_flight: u32,

    /// Redeliveries of one tenant in flight in this process at once.
    #[arg(long, env = "DOORMAN_REDELIVERY_IN_FLIGHT_PER_TENANT", default_value_t = 8)]
    pub redelivery_in_flight_per_tenant: u32,

    /// Redeliveries this process starts per second on average, over all tenants, and at most
    /// one second's worth at once (0: no pace, only the in-flight budgets). What a backlog after
    /// an outage costs the database and the live traffic beside it: 10,000 due at 100/s drain
    /// in under two minutes; each process has its own.
    #[arg(long, env = "DOORMAN_REDELIVERY_PER_SECOND", default_value_t = 100)]
    pub redelivery_per_second: u32,

    /// How long a redelivery holds its event (no other process or replay sends it meanwhile),
    /// and how long an event that no attempt finished waits before it is due. Longer than the
    /// dispatch timeout; default: the dispatch timeout plus 30 s.
    #[arg(long, env = "DOORMAN_REDELIVERY_HOLD")]
    pub redelivery_hold: Option<humantime::Duration>,
}

/// How events are dispatched to agents and their outcomes kept: `doorman serve` and
/// `doorman receipts replay` read the same settings, so a replay goes through the same
/// bridge, bounds, circuit and keys as a live delivery.
#[derive(Debug, Clone, Args)]
pub struct DispatchArgs {
    /// How long receipts are kept (at least 10m: Slack retries for about 5 minutes).
    #[arg(long, env = "DOORMAN_RECEIPT_RETENTION", default_value_t = Retention::DEFAULT_KEEP_FOR.into())]
    pub receipt_retention: humantime::Duration,

    /// Most expired receipts deleted by one completed dispatch.
    #[arg(long, env = "DOORMAN_PRUNE_BATCH", default_value_t = 500)]
    pub prune_batch: u32,

    /// Longest a dispatch to an agent may take.
    #[arg(long, env = "DOORMAN_DISPATCH_TIMEOUT", default_value = "60s")]
    pub dispatch_timeout: humantime::Duration,

    /// Consecutive dispatch failures that open a tenant's circuit.
    #[arg(long, env = "DOORMAN_CIRCUIT_FAILURES", default_value_t = 5)]
    pub circuit_failures: u32,

    /// How long an open circuit answers 503 before letting a dispatch through again.
    #[arg(long, env = "DOORMAN_CIRCUIT_COOLDOWN", default_value = "30s")]
    pub circuit_cooldown: humantime::Duration,

    /// Deliveries of one tenant in flight at once (acknowledged and not yet dispatched);
    /// past it, 503 before anything is claimed. Also the most connections to its agent.
    #[arg(long, env = "DOORMAN_MAX_IN_FLIGHT_PER_TENANT", default_value_t = 64)]
    pub max_in_flight_per_tenant: usize,

    /// Deliveries in flight in the whole process; past it, 503 before anything is claimed.
    #[arg(long, env = "DOORMAN_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,

    #[command(flatten)]
    pub keys: KeysArgs,

    #[command(flatten)]
    pub destinations: DestinationArgs,

    #[command(flatten)]
    pub slack_app: SlackAppArgs,
}

/// The Slack app, for installing it into customers' workspaces (OAuth v2). Without a client
/// id and secret, installs are off.
#[derive(Debug, Clone, Args)]
pub struct SlackAppArgs {
    /// The Slack app's client id (Basic Information → App Credentials).
    #[arg(long = "slack-client-id", env = "SLACK_CLIENT_ID")]
    pub client_id: Option<String>,
    /// The Slack app's client secret.
    #[arg(long = "slack-client-secret", env = "SLACK_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<Secret>,
    /// Bot scopes asked for on install, comma-separated.
    #[arg(
        long = "slack-scopes",
        env = "SLACK_SCOPES",
        default_value = "app_mentions:read,chat:write,commands"
    )]
    pub scopes: String,
    /// The https origin customers' browsers reach Doorman at; Slack redirects back to
    /// `{this}/slack/oauth/callback`.
    #[arg(long = "public-url", env = "DOORMAN_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Slack's Web API (a fake Slack's, in tests and staging).
    #[arg(long = "slack-api-url", env = "DOORMAN_SLACK_API_URL", default_value = "https://slack.com/api")]
    pub api_url: String,
    /// Slack's authorize page.
    #[arg(
        long = "slack-authorize-url",
        env = "DOORMAN_SLACK_AUTHORIZE_URL",
        default_value = "https://slack.com/oauth/v2/authorize"
    )]
    pub authorize_url: String,
}

/// Where agents may be reached.
#[derive(Debug, Clone, Copy, Args)]
pub struct DestinationArgs {
    /// Allow `http` agent URLs and private, loopback and link-local addresses (local
    /// development and tests; never in production).
    #[arg(long = "agent-allow-private", env = "DOORMAN_AGENT_ALLOW_PRIVATE", default_value_t = false, action = clap::ArgAction::Set)]
    pub agent_allow_private: bool,
}

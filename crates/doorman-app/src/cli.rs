//! The command line. Every setting is a flag with an environment variable behind it; the
//! README lists them with their defaults. Secret values are hidden from `--help` and from
//! `Debug`.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use doorman_adapters::slack::DEFAULT_WINDOW;
use doorman_domain::usecases::operator::installs::LinkLifetime;
use doorman_domain::{ReceiptStatus, Retention};

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

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Serve the admin API (`/admin/v1`) for the platform's backend, as a member of
    /// `doorman_admin` (never `doorman serve`'s role).
    Serve(Box<AdminServeArgs>),
    /// Create, list and revoke admin API keys.
    #[command(subcommand)]
    Keys(ApiKeysCommand),
    /// The audit trail: every change made through the admin API or the command line, newest
    /// first.
    Audit {
        #[arg(long)]
        tenant: Option<String>,
        /// How many entries (at most 100 per page; pages are followed up to this many).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Print the admin API's OpenAPI 3.1 document (also served at /admin/v1/openapi.json).
    Openapi,
    /// Delete console sessions that ended or expired and sign-in links spent or expired, in
    /// bounded batches (run it daily, beside `receipts prune`).
    PruneSessions {
        #[arg(long, default_value_t = 1000)]
        batch: u32,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApiKeysCommand {
    /// Create a key and print it once (`dmk_…`); only its hash is stored.
    Create {
        #[arg(long)]
        name: String,
        /// Scope the key to one tenant (it sees nothing else, and cannot create tenants).
        #[arg(long)]
        tenant: Option<String>,
        /// The key may read, never change anything.
        #[arg(long)]
        read_only: bool,
        /// The key stops working this long from now (`90d`, `12h`); without it, it never
        /// expires (revoke it when it is no longer needed).
        #[arg(long)]
        expires_in: Option<humantime::Duration>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List keys (never their secrets).
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Revoke a key: its next request, to any admin process, is refused.
    Revoke {
        /// The key's id (`keys list`).
        id: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    // Its help is made from the link's lifetime: `sign_in_link_about`.
    #[command(about = sign_in_link_about())]
    SignInLink {
        /// The key's id (`keys list`).
        id: String,
        /// Where browsers reach the console; without it, the link's path is printed.
        #[arg(long, env = "DOORMAN_CONSOLE_URL", value_parser = console_url)]
        console_url: Option<url::Url>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

/// `doorman admin serve`.
#[derive(Debug, Clone, Args)]
pub struct AdminServeArgs {
    /// Log in as a role whose only membership is `doorman_admin`.
    #[command(flatten)]
    pub db: DatabaseArgs,

    /// Address the admin API listens on. Keep it off the internet: only the platform's backend
    /// needs it.
    #[arg(long, env = "DOORMAN_ADMIN_BIND", default_value = "127.0.0.1:3001")]
    pub bind: SocketAddr,

    /// Where `GET /metrics` answers: an address of its own, loopback by default (never the
    /// API's).
    #[arg(long, env = "DOORMAN_ADMIN_METRICS_BIND", default_value = "127.0.0.1:9301")]
    pub metrics_bind: SocketAddr,

    /// HTTP worker threads (0: one per CPU).
    #[arg(long, env = "DOORMAN_ADMIN_WORKERS", default_value_t = 0)]
    pub workers: usize,

    /// Where browsers reach the operator console (`/console/` of this process), e.g.
    /// `https://admin.example`: sign-in links begin with it (none is made without it), forms
    /// must come from it, and on https its session cookie is `__Host-doorman_console`.
    #[arg(long, env = "DOORMAN_CONSOLE_URL", value_parser = console_url)]
    pub console_url: Option<url::Url>,

    /// Proxies in front of this process (addresses or CIDRs, comma-separated: `10.0.0.0/8,
    /// 192.0.2.7`) whose `Forwarded` or `X-Forwarded-Host`/`-Proto` headers say where the
    /// browser reached the console when DOORMAN_CONSOLE_URL is unset. Nobody by default: the
    /// request's own Host then counts.
    #[arg(long, env = "DOORMAN_TRUSTED_PROXIES", value_delimiter = ',', value_parser = trusted_proxy)]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// How replays dispatch, and where agents may be (shared with `serve`).
    #[command(flatten)]
    pub dispatch: DispatchArgs,
}

#[derive(Debug, Subcommand)]
pub enum SlackCommand {
    /// Print an install link for a tenant's customer: `{DOORMAN_PUBLIC_URL}/slack/install/…`,
    /// usable for several installs until it expires.
    InstallLink {
        #[arg(long)]
        tenant: String,
        #[arg(long, default_value_t = LinkLifetime::DEFAULT.into())]
        expires_in: humantime::Duration,
        #[command(flatten)]
        slack_app: SlackAppArgs,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List installations (never their tokens).
    Installations {
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Remove a tenant's installation of a workspace and the workspace's link.
    Uninstall {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        team_id: Option<String>,
        /// With no --team-id: an org-wide install.
        #[arg(long)]
        enterprise_id: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Delete every tenant's expired or consumed install states, in bounded batches.
    PruneStates {
        #[arg(long, default_value_t = 1000)]
        batch: u32,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
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

/// A value that must not be printed: `Debug` shows a placeholder.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl FromStr for Secret {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Err("must not be empty".into());
        }
        Ok(Self(s.trim().to_owned()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

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

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id alone on stdout.
    Add {
        #[arg(long)]
        name: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List tenants, oldest first.
    List {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Keep (on) or stop keeping (off) the payloads of the tenant's claimed events until they
    /// are handled, so `receipts replay` can send them again. Off by default. Payloads are
    /// sealed like other secrets and deleted when handled or pruned.
    RetainPayloads {
        #[arg(long)]
        tenant: String,
        setting: OnOff,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Rename a tenant.
    Rename {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Offboard a customer: delete the tenant, its workspace links (its next event is answered
    /// as an unknown workspace's), installations and tokens, agent, kept payloads, scoped keys
    /// and receipts. The audit trail keeps its entries. Asks for --yes.
    Delete {
        #[arg(long)]
        tenant: String,
        /// Delete without asking: there is no undo.
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Link a Slack team (optionally inside an enterprise), or with only --enterprise-id an
    /// org-wide install, to a tenant.
    Link {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        team_id: Option<String>,
        #[arg(long)]
        enterprise_id: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List a tenant's workspace links.
    List {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Remove a tenant's link (and the app's installation there, if any): a team by its id, an
    /// org-wide install by its enterprise id.
    Unlink {
        #[arg(long)]
        tenant: String,
        /// A team id, or an org-wide install's enterprise id.
        #[arg(long)]
        id: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Set a tenant's agent URL and dispatch signing secret (`whsec_` + base64).
    Set {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        url: String,
        /// Prefer the environment variable: a flag is visible in the process list.
        #[arg(long, env = "DOORMAN_AGENT_SECRET", hide_env_values = true)]
        secret: Secret,
        #[command(flatten)]
        keys: KeysArgs,
        #[command(flatten)]
        destinations: DestinationArgs,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Show a tenant's agent (never its secret).
    Show {
        #[command(flatten)]
        target: TenantTarget,
        #[arg(long)]
        json: bool,
    },
    /// Pause a tenant's agent: deliveries are answered 503 and Slack retries them later.
    Pause(TenantTarget),
    /// Resume a paused agent.
    Resume(TenantTarget),
    /// Remove a tenant's agent (and its secret): deliveries are answered 503 (no agent) until
    /// one is set again.
    Remove(TenantTarget),
}

/// A command that acts on one tenant and nothing else.
#[derive(Debug, Clone, Args)]
pub struct TenantTarget {
    #[arg(long)]
    pub tenant: String,
    #[command(flatten)]
    pub db: DatabaseArgs,
}

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
    /// What happened to one event: handled, failed, in flight, stranded, or unknown (exit 1).
    Show {
        #[arg(long)]
        tenant: String,
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

/// `DOORMAN_DB_POOL_MODE`: what stands between Doorman and PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DbPoolMode {
    /// Nothing, or a pooler in session mode.
    Session,
    /// A pooler in transaction mode.
    Transaction,
}

/// `--trusted-proxies`: an address (`192.0.2.7`, `::1`) or a network (`10.0.0.0/8`).
fn trusted_proxy(raw: &str) -> Result<ipnet::IpNet, String> {
    let raw = raw.trim();
    raw.parse::<ipnet::IpNet>()
        .or_else(|_| raw.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{raw:?} is not an IP address or a network like 10.0.0.0/8"))
}

/// `--console-url`: an http(s) address with nothing after its path.
fn console_url(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("must be an http or https address, like https://admin.example".into());
    }
    if url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err("must have no query, fragment or credentials".into());
    }
    Ok(url)
}

/// `admin keys sign-in-link`'s help, with the link's lifetime from its constant (no closing
/// period, as clap leaves it off a doc comment's).
fn sign_in_link_about() -> String {
    format!(
        "Print a one-time sign-in link to the operator console for a key scoped to one tenant (a \
         customer's portal): good for one sign-in within {}",
        crate::documents::sign_in_link_lifetime()
    )
}

//! `doorman admin`: serving the operator's HTTP face, its keys, the audit trail, the OpenAPI
//! document, and pruning console sessions.

use std::net::SocketAddr;

use clap::{Args, Subcommand};

use super::{DatabaseArgs, DispatchArgs};

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
        /// Only entries of this action (a word of the trail, like tenant.create), as the API's
        /// `action`.
        #[arg(long)]
        action: Option<String>,
        /// Only entries made with this key (its id), as the API's `key`.
        #[arg(long)]
        key: Option<String>,
        /// Only entries at or after this instant (RFC 3339, like 2026-12-01T10:00:00Z), as the
        /// API's `since`.
        #[arg(long)]
        since: Option<String>,
        /// Only entries before this instant (RFC 3339; not before --since), as the API's `until`.
        #[arg(long)]
        until: Option<String>,
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
        /// The key may read the payloads tenants keep (what their customers wrote), in event
        /// documents and pages. With `--tenant` and `--read-only` (a customer's read-only
        /// portal) only while the tenant allows it (`tenant read-only-portals-read-payloads`).
        #[arg(long)]
        read_payloads: bool,
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

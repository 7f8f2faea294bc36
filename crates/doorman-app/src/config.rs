//! Validated settings for `doorman serve`, `doorman admin serve` and the dispatch settings
//! `receipts replay` shares with them, and the database sessions' limits. The command line
//! builds them once at start-up (its `settings` module): anything invalid stops the process
//! with a message naming the setting, never the value of a secret.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use doorman_adapters::bridge::{BridgeSettings, OperationalWebhookSettings};
use doorman_adapters::postgres::PoolSettings;
use doorman_adapters::postgres::connect::SessionLimits;
use doorman_adapters::secrets::Keyring;
use doorman_adapters::slack::Verifier;
use doorman_adapters::slack::oauth::SlackApp;
use doorman_domain::{RedeliverySchedule, Retention};

/// The longest a request may wait for a connection to resolve its workspace: with the
/// claim's 1.5 s (`ClaimTimeouts::confirm_within`), inside Slack's 3 s.
pub const MAX_ACQUIRE_TIMEOUT: Duration = Duration::from_millis(1250);

/// The acknowledgement pool's sessions (resolves the directory's memory does not have, and the
/// claims writer): a statement must end well inside Slack's 3 s, after the wait for a
/// connection (at most 1.25 s). 1.5 s is also the claim's own deadline; a statement the server
/// cancels first wrote nothing, so its deliveries are answered 503 and retried.
pub const ACKNOWLEDGEMENT_LIMITS: SessionLimits = SessionLimits {
    statement: Duration::from_millis(1500),
    lock: Duration::from_secs(1),
    idle_in_transaction: Duration::from_secs(5),
};

/// The background pool's (outcomes, token refreshes, uninstalls, the gauges' counts, whose
/// sweep is the longest: ~3 µs a receipt it passes over after a long stop).
pub const BACKGROUND_LIMITS: SessionLimits = SessionLimits {
    statement: Duration::from_secs(60),
    lock: Duration::from_secs(5),
    idle_in_transaction: Duration::from_secs(60),
};

/// The admin API's and the operator commands' (listings, replays, prunes in batches).
pub const OPERATOR_LIMITS: SessionLimits = SessionLimits {
    statement: Duration::from_secs(300),
    lock: Duration::from_secs(10),
    idle_in_transaction: Duration::from_secs(300),
};

#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub database_url: Secret,
    /// Where the directory's listener connects (`DOORMAN_LISTEN_DATABASE_URL`, else the
    /// database URL).
    pub listen_database_url: Secret,
    pub bind: SocketAddr,
    /// Where `/metrics` answers.
    pub metrics_bind: SocketAddr,
    pub verifier: Verifier,
    pub retention: Retention,
    pub max_body_bytes: usize,
    pub drain_timeout: Duration,
    pub pool: PoolSettings,
    pub background_pool: PoolSettings,
    pub bridge: BridgeSettings,
    pub workers: usize,
    pub body_read_timeout: Duration,
    pub keys: Arc<Keyring>,
    /// `None`: installs are off (no client id and secret).
    pub slack_app: Option<SlackInstall>,
    pub redelivery: RedeliveryConfig,
    /// Failing this long disables an agent; `None`: never.
    pub agent_disable_after: Option<Duration>,
    /// `None`: no operational webhook (neither its URL nor its secret): nothing is recorded or
    /// sent.
    pub operational_webhook: Option<OperationalWebhookConfig>,
}

/// The operational webhook (issue 41) and its sender's settings.
#[derive(Debug, Clone)]
pub struct OperationalWebhookConfig {
    pub webhook: OperationalWebhookSettings,
    /// The delays before each retry (the standard schedule unless a test shortens it).
    pub schedule: RedeliverySchedule,
    /// How often the sender looks for due events (at once again while a backlog drains).
    pub every: Duration,
    /// How long a taken event is held from other processes: longer than an attempt may take.
    pub hold: Duration,
    /// How long delivered and given-up events are kept before they are pruned.
    pub keep_for: Duration,
}

impl OperationalWebhookConfig {
    /// The longest one attempt may take: a receiver of the platform's own answers quickly.
    pub const TIMEOUT: Duration = Duration::from_secs(10);
    /// What is kept of delivered and given-up events: a week.
    pub const KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);
}

/// The redelivery runner's settings (ADR 26).
#[derive(Debug, Clone, Copy)]
pub struct RedeliveryConfig {
    /// How often the runner looks for due events.
    pub every: Duration,
    /// Redeliveries in flight in the process at once; 0: the runner does not run.
    pub in_flight: u32,
    pub in_flight_per_tenant: u32,
    /// Redeliveries the process starts per second at most; 0: no pace, only the in-flight
    /// budgets.
    pub per_second: u32,
    /// How long a taken event is held; longer than a dispatch may take.
    pub hold: Duration,
}

/// The Slack app's install settings, when installs are on.
#[derive(Debug, Clone)]
pub struct SlackInstall {
    pub app: SlackApp,
    pub scopes: String,
    pub authorize_url: String,
    pub public_url: String,
}

impl SlackInstall {
    /// Whether the install cookie may be marked `Secure` (the public origin is https).
    pub fn secure_cookies(&self) -> bool {
        self.public_url.starts_with("https://")
    }
}

/// How events are dispatched and their outcomes kept, for `serve` and `receipts replay`.
#[derive(Debug, Clone)]
pub struct DispatchConfig {
    pub retention: Retention,
    pub bridge: BridgeSettings,
    pub keys: Arc<Keyring>,
    /// `None`: installs are off (no client id and secret).
    pub slack_app: Option<SlackInstall>,
}

/// Validated settings for `doorman admin serve`.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    pub database_url: Secret,
    pub bind: SocketAddr,
    /// Where `/metrics` answers.
    pub metrics_bind: SocketAddr,
    pub workers: usize,
    pub pool: PoolSettings,
    /// For replays (the same bridge, bounds and keys as `serve`), sealing agents' secrets,
    /// where agents may be, and install links.
    pub dispatch: DispatchConfig,
    /// Where browsers reach the operator console, and whom to believe about it.
    pub console: ConsoleAddress,
}

/// Where browsers reach the operator console: what its forms' `Origin` must be, whether its
/// cookie is https-only, and where sign-in links begin.
#[derive(Debug, Clone, Default)]
pub struct ConsoleAddress {
    /// `DOORMAN_CONSOLE_URL`: when set, the console's one origin.
    pub url: Option<url::Url>,
    /// `DOORMAN_TRUSTED_PROXIES`: peers whose forwarded headers say the origin (when `url` is
    /// unset). Any other peer's forwarded headers are ignored: a client can write them.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

impl ConsoleAddress {
    /// Whether a request from `peer` may say, in forwarded headers, where the browser was.
    pub fn trusts(&self, peer: std::net::IpAddr) -> bool {
        let peer = match peer {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, std::net::IpAddr::V4),
            v4 => v4,
        };
        self.trusted_proxies.iter().any(|net| net.contains(&peer))
    }
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

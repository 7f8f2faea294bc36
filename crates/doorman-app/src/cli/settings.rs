//! What the command line took, turned into validated settings (`crate::config`) once at
//! start-up: anything invalid stops the process with a message naming the setting, never the
//! value of a secret.

use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use doorman_adapters::bridge::{
    BridgeSettings, CircuitSettings, DestinationPolicy, LimitSettings, OperationalWebhookSettings,
};
use doorman_adapters::postgres::pool::PoolMode;
use doorman_adapters::postgres::{CitusWrites, PoolSettings};
use doorman_adapters::secrets::Keyring;
use doorman_adapters::slack::oauth::SlackApp;
use doorman_adapters::slack::{SigningSecret, Verifier};
use doorman_domain::{AgentSecret, AgentUrl, RedeliverySchedule, Retention};

use super::args::{
    AdminServeArgs, CitusWritesArg, DbPoolMode, DestinationArgs, DispatchArgs, KeysArgs,
    OperationalWebhookArgs, RedeliveryArgs, Secret, ServeArgs, SlackAppArgs,
};
use crate::config::{
    ACKNOWLEDGEMENT_LIMITS, AdminConfig, BACKGROUND_LIMITS, ConsoleAddress, DispatchConfig,
    MAX_ACQUIRE_TIMEOUT, OPERATOR_LIMITS, OperationalWebhookConfig, RedeliveryConfig, ServeConfig,
    SlackInstall,
};

/// The Slack app's install settings from their flags, or `None` without a client id and secret.
pub fn slack_install(args: &SlackAppArgs) -> anyhow::Result<Option<SlackInstall>> {
    let (Some(client_id), Some(client_secret)) = (&args.client_id, &args.client_secret) else {
        return Ok(None);
    };
    let public_url = args
        .public_url
        .as_deref()
        .map(|u| u.trim_end_matches('/').to_owned())
        .context("DOORMAN_PUBLIC_URL is required with SLACK_CLIENT_ID: Slack redirects back to it")?;
    if !(public_url.starts_with("https://") || public_url.starts_with("http://")) {
        bail!("DOORMAN_PUBLIC_URL must be an http(s) origin, like https://doorman.example");
    }
    let app = SlackApp {
        client_id: client_id.clone(),
        client_secret: client_secret.expose().to_owned(),
        api_url: args.api_url.trim_end_matches('/').to_owned(),
        redirect_uri: format!("{public_url}/slack/oauth/callback"),
    };
    // Checked once here, so an install never finds it broken.
    app.authorize_link(&args.authorize_url, &args.scopes, "state")
        .map_err(|e| anyhow::anyhow!("DOORMAN_SLACK_AUTHORIZE_URL is not a URL: {e}"))?;
    Ok(Some(SlackInstall {
        app,
        scopes: args.scopes.clone(),
        authorize_url: args.authorize_url.clone(),
        public_url,
    }))
}

/// Where agents may be, from `DOORMAN_AGENT_ALLOW_PRIVATE`.
pub fn destinations(args: &DestinationArgs) -> DestinationPolicy {
    DestinationPolicy { allow_private: args.agent_allow_private }
}

/// The keyring from `DOORMAN_ENCRYPTION_KEYS`, for every command that seals or opens secrets.
pub fn keyring(args: &KeysArgs) -> anyhow::Result<Arc<Keyring>> {
    let spec = args.encryption_keys.as_ref().map(Secret::expose).unwrap_or("");
    Ok(Arc::new(Keyring::parse(spec).context("DOORMAN_ENCRYPTION_KEYS")?))
}

impl DispatchConfig {
    pub fn from_args(args: &DispatchArgs) -> anyhow::Result<Self> {
        let retention = Retention::new(*args.receipt_retention, args.prune_batch)
            .context("DOORMAN_RECEIPT_RETENTION / DOORMAN_PRUNE_BATCH")?;
        let positive =
            |n: usize, name: &str| NonZeroUsize::new(n).with_context(|| format!("{name} must be at least 1"));
        let limits = LimitSettings {
            per_tenant: positive(args.max_in_flight_per_tenant, "DOORMAN_MAX_IN_FLIGHT_PER_TENANT")?,
            total: positive(args.max_in_flight, "DOORMAN_MAX_IN_FLIGHT")?,
        };
        Ok(Self {
            retention,
            bridge: BridgeSettings {
                dispatch_timeout: *args.dispatch_timeout,
                circuit: CircuitSettings {
                    failures: NonZeroU32::new(args.circuit_failures)
                        .context("DOORMAN_CIRCUIT_FAILURES must be at least 1")?,
                    cooldown: *args.circuit_cooldown,
                },
                limits,
                destinations: destinations(&args.destinations),
                ..BridgeSettings::default()
            },
            keys: keyring(&args.keys)?,
            slack_app: slack_install(&args.slack_app)?,
        })
    }
}

impl AdminConfig {
    pub fn from_args(args: &AdminServeArgs) -> anyhow::Result<Self> {
        Ok(Self {
            database_url: args.db.database_url.clone(),
            bind: args.bind,
            metrics_bind: args.metrics_bind,
            workers: workers(args.workers),
            // Operator actions are few and short; a replay holds one connection at a time.
            pool: PoolSettings {
                max_size: 4,
                connection_timeout: Duration::from_secs(5),
                limits: OPERATOR_LIMITS,
                ..PoolSettings::default()
            },
            dispatch: DispatchConfig::from_args(&args.dispatch)?,
            console: ConsoleAddress {
                url: args.console_url.clone(),
                trusted_proxies: args.trusted_proxies.clone(),
            },
        })
    }
}

/// The redelivery runner's settings: a hold longer than a dispatch may take.
fn redelivery(args: &RedeliveryArgs, dispatch_timeout: Duration) -> anyhow::Result<RedeliveryConfig> {
    if args.redelivery_every.is_zero() {
        bail!("DOORMAN_REDELIVERY_EVERY must be above zero");
    }
    if args.redelivery_in_flight > 0 && args.redelivery_in_flight_per_tenant == 0 {
        bail!(
            "DOORMAN_REDELIVERY_IN_FLIGHT_PER_TENANT must be above zero (DOORMAN_REDELIVERY_IN_FLIGHT=0 turns redelivery off in this process)"
        );
    }
    let hold = args.redelivery_hold.map_or_else(|| crate::replays::hold(dispatch_timeout), |hold| *hold);
    if hold <= dispatch_timeout {
        bail!(
            "DOORMAN_REDELIVERY_HOLD ({}) must be longer than DOORMAN_DISPATCH_TIMEOUT ({}): a redelivery holds its event while it may still be sent",
            humantime::format_duration(hold),
            humantime::format_duration(dispatch_timeout)
        );
    }
    Ok(RedeliveryConfig {
        every: *args.redelivery_every,
        in_flight: args.redelivery_in_flight,
        in_flight_per_tenant: args.redelivery_in_flight_per_tenant,
        per_second: args.redelivery_per_second,
        hold,
    })
}

/// The operational webhook from its two settings (both or neither), checked as an agent's URL
/// and secret are, under the agents' destination rules; the errors name the setting, never the
/// secret.
fn operational_webhook(
    args: &OperationalWebhookArgs,
    bridge: &BridgeSettings,
) -> anyhow::Result<Option<OperationalWebhookConfig>> {
    let (url, secret) = match (&args.operational_webhook_url, &args.operational_webhook_secret) {
        (None, None) => return Ok(None),
        (Some(url), Some(secret)) => (url, secret),
        _ => bail!(
            "DOORMAN_OPERATIONAL_WEBHOOK_URL and DOORMAN_OPERATIONAL_WEBHOOK_SECRET go together: set both, or neither"
        ),
    };
    let url = AgentUrl::from_operator(url).context("DOORMAN_OPERATIONAL_WEBHOOK_URL")?;
    bridge.destinations.check_url(&url).context("DOORMAN_OPERATIONAL_WEBHOOK_URL")?;
    let secret = AgentSecret::parse(secret.expose()).context("DOORMAN_OPERATIONAL_WEBHOOK_SECRET")?;
    let schedule = RedeliverySchedule::parse(&args.operational_webhook_schedule)
        .context("DOORMAN_OPERATIONAL_WEBHOOK_SCHEDULE")?;
    let timeout = OperationalWebhookConfig::TIMEOUT;
    Ok(Some(OperationalWebhookConfig {
        webhook: OperationalWebhookSettings {
            url,
            secret,
            timeout,
            connect_timeout: bridge.connect_timeout,
            destinations: bridge.destinations,
            extra_roots: bridge.extra_roots.clone(),
        },
        schedule,
        every: Duration::from_secs(1),
        hold: crate::replays::hold(timeout),
        keep_for: OperationalWebhookConfig::KEEP_FOR,
    }))
}

/// `0` is one worker per CPU.
fn workers(asked: usize) -> usize {
    if asked == 0 { std::thread::available_parallelism().map(usize::from).unwrap_or(2) } else { asked }
}

impl ServeConfig {
    pub fn from_args(args: &ServeArgs) -> anyhow::Result<Self> {
        let secrets: Vec<SigningSecret> =
            args.slack_signing_secret.iter().map(|s| SigningSecret::new(s.expose())).collect();
        if secrets.is_empty() {
            bail!("SLACK_SIGNING_SECRET is required (comma-separated for a rotation)");
        }
        if args.max_body_bytes == 0 {
            bail!("DOORMAN_MAX_BODY_BYTES must be above zero");
        }
        if args.db_pool_size == 0 || args.db_background_pool_size == 0 {
            bail!("DOORMAN_DB_POOL_SIZE and DOORMAN_DB_BACKGROUND_POOL_SIZE must be above zero");
        }
        let acquire = *args.db_acquire_timeout;
        // An acknowledgement waits for a connection to resolve, then at most
        // `ClaimTimeouts::confirm_within` (1.5 s) for its claim: both must fit in Slack's 3 s.
        if acquire > MAX_ACQUIRE_TIMEOUT {
            bail!(
                "DOORMAN_DB_ACQUIRE_TIMEOUT must be at most 1250ms: with the claim's 1.5 s it must fit inside Slack's 3 s"
            );
        }
        if args.body_read_timeout.is_zero() {
            bail!("DOORMAN_BODY_READ_TIMEOUT must be above zero");
        }
        let mode = match args.db_pool_mode {
            DbPoolMode::Session => PoolMode::Session,
            DbPoolMode::Transaction => PoolMode::Transaction,
        };
        if mode == PoolMode::Transaction && args.listen_database_url.is_none() {
            bail!(
                "DOORMAN_DB_POOL_MODE=transaction needs DOORMAN_LISTEN_DATABASE_URL: the directory's LISTEN needs a session of its own (PostgreSQL directly, or a pooler in session mode)"
            );
        }
        let citus_writes = match args.citus_writes {
            CitusWritesArg::Node => CitusWrites::OnTheirNode,
            CitusWritesArg::Coordinator => CitusWrites::ThroughTheCoordinator,
        };
        let DispatchConfig { retention, bridge, keys, slack_app } =
            DispatchConfig::from_args(&args.dispatch)?;
        let redelivery = redelivery(&args.redelivery, bridge.dispatch_timeout)?;
        let operational_webhook = operational_webhook(&args.operational_webhook, &bridge)?;
        let workers = workers(args.workers);
        Ok(Self {
            database_url: args.db.database_url.clone(),
            listen_database_url: args
                .listen_database_url
                .clone()
                .unwrap_or_else(|| args.db.database_url.clone()),
            bind: args.bind,
            metrics_bind: args.metrics_bind,
            verifier: Verifier::new(secrets, *args.signature_window),
            retention,
            max_body_bytes: args.max_body_bytes,
            drain_timeout: *args.drain_timeout,
            pool: PoolSettings {
                max_size: args.db_pool_size,
                connection_timeout: acquire,
                mode,
                citus_writes,
                limits: ACKNOWLEDGEMENT_LIMITS,
                ..PoolSettings::default()
            },
            // No deadline after the answer: wait longer for a connection rather than fail a
            // completion that would leave a delivered event looking stranded.
            background_pool: PoolSettings {
                max_size: args.db_background_pool_size,
                mode,
                citus_writes,
                connection_timeout: Duration::from_secs(30),
                limits: BACKGROUND_LIMITS,
                ..PoolSettings::default()
            },
            bridge,
            workers,
            body_read_timeout: *args.body_read_timeout,
            keys,
            slack_app,
            redelivery,
            agent_disable_after: (!args.agent_disable_after.is_zero()).then_some(*args.agent_disable_after),
            operational_webhook,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn serve_args(extra: &[&str]) -> ServeArgs {
        let mut argv = vec![
            "doorman",
            "serve",
            "--slack-signing-secret",
            "a,b",
            "--encryption-keys",
            "k:a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=",
        ];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Serve(args) => *args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_sane() {
        let config = ServeConfig::from_args(&serve_args(&[])).unwrap();
        assert_eq!(config.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(config.retention.keep_for(), Duration::from_secs(7 * 24 * 3600));
        assert_eq!(config.max_body_bytes, 1024 * 1024);
        assert_eq!(config.bridge.dispatch_timeout, Duration::from_secs(60));
        assert_eq!(config.bridge.circuit.failures.get(), 5);
        assert_eq!(config.bridge.limits.per_tenant.get(), 64);
        assert_eq!(config.bridge.limits.total.get(), 1024);
        assert!(!config.bridge.destinations.allow_private, "https and public addresses only");
        assert_eq!(config.body_read_timeout, Duration::from_secs(5));
    }

    #[test]
    fn a_retention_inside_slacks_retry_window_is_refused() {
        let error = ServeConfig::from_args(&serve_args(&["--receipt-retention", "5m"])).unwrap_err();
        assert!(format!("{error:#}").contains("10 minutes"), "{error:#}");
        assert!(ServeConfig::from_args(&serve_args(&["--receipt-retention", "10m"])).is_ok());
    }

    #[test]
    fn an_acquire_timeout_that_cannot_fit_twice_in_slacks_deadline_is_refused() {
        assert!(ServeConfig::from_args(&serve_args(&["--db-acquire-timeout", "1250ms"])).is_ok());
        let error = ServeConfig::from_args(&serve_args(&["--db-acquire-timeout", "1500ms"])).unwrap_err();
        assert!(error.to_string().contains("1250ms"), "{error}");
    }

    #[test]
    fn zero_circuit_failures_is_refused_not_clamped() {
        let error = ServeConfig::from_args(&serve_args(&["--circuit-failures", "0"])).unwrap_err();
        assert!(format!("{error:#}").contains("DOORMAN_CIRCUIT_FAILURES must be at least 1"), "{error:#}");
    }

    #[test]
    fn missing_or_bad_encryption_keys_are_refused_without_quoting_them() {
        let parse = |extra: &[&str]| {
            let argv = [&["doorman", "serve", "--slack-signing-secret", "a"], extra].concat();
            let Command::Serve(args) = Cli::try_parse_from(argv).unwrap().command else { unreachable!() };
            ServeConfig::from_args(&args).unwrap_err()
        };
        let error = parse(&[]);
        assert!(format!("{error:#}").contains("DOORMAN_ENCRYPTION_KEYS"), "{error:#}");
        let error = parse(&["--encryption-keys", "k:c2VjcmV0LWJ1dC1zaG9ydA=="]);
        assert!(format!("{error:#}").contains("32 bytes"), "{error:#}");
        assert!(!format!("{error:#}").contains("c2VjcmV0"), "{error:#}");
    }

    #[test]
    fn zero_bounds_are_refused() {
        for flag in ["--max-in-flight", "--max-in-flight-per-tenant"] {
            let error = ServeConfig::from_args(&serve_args(&[flag, "0"])).unwrap_err();
            assert!(format!("{error:#}").contains("must be at least 1"), "{error:#}");
        }
    }

    #[test]
    fn the_operational_webhook_needs_both_settings_checked_as_an_agents() {
        const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let config = ServeConfig::from_args(&serve_args(&[])).unwrap();
        assert!(config.operational_webhook.is_none(), "off without its settings");
        let url = ["--operational-webhook-url", "https://ops.example/doorman"];
        let secret = ["--operational-webhook-secret", SECRET];
        for half in [&url[..], &secret[..]] {
            let error = ServeConfig::from_args(&serve_args(half)).unwrap_err();
            assert!(format!("{error:#}").contains("set both, or neither"), "{error:#}");
        }
        let config = ServeConfig::from_args(&serve_args(&[&url[..], &secret[..]].concat())).unwrap();
        let webhook = config.operational_webhook.expect("on");
        assert_eq!(webhook.schedule, RedeliverySchedule::standard());
        assert_eq!(webhook.webhook.url.as_str(), "https://ops.example/doorman");
        assert!(!format!("{webhook:?}").contains("MfKQ9r8G"), "the secret never prints");

        let http = ["--operational-webhook-url", "http://ops.example/doorman"];
        let error = ServeConfig::from_args(&serve_args(&[&http[..], &secret[..]].concat())).unwrap_err();
        assert!(format!("{error:#}").contains("DOORMAN_OPERATIONAL_WEBHOOK_URL"), "{error:#}");
        let private = ["--agent-allow-private", "true"];
        assert!(
            ServeConfig::from_args(&serve_args(&[&http[..], &secret[..], &private[..]].concat())).is_ok()
        );

        let bad = ["--operational-webhook-secret", "whsec_c2hvcnQ="];
        let error = ServeConfig::from_args(&serve_args(&[&url[..], &bad[..]].concat())).unwrap_err();
        let error = format!("{error:#}");
        assert!(
            error.contains("DOORMAN_OPERATIONAL_WEBHOOK_SECRET") && !error.contains("c2hvcnQ"),
            "{error}"
        );
    }

    #[test]
    fn secrets_do_not_print() {
        let args = serve_args(&["--database-url", "postgres://u:hunter2@db/doorman"]);
        let printed = format!("{args:?} {:?}", ServeConfig::from_args(&args).unwrap());
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(!printed.contains("slack_signing_secret: [\"a\""), "{printed}");
    }
}

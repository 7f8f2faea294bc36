//! What every operator command acts with: the operator use cases on an owner pool, as `cli`
//! and the OS user, one request id per command; and how their refusals read on a terminal.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use doorman_adapters::bridge::DestinationPolicy;
use doorman_adapters::postgres::pool::{self, PoolSettings};
use doorman_adapters::postgres::{PgMaintenance, PgOperatorPorts, PgPool};
use doorman_adapters::secrets::Keyring;
use doorman_domain::usecases::operator::{Operator, OperatorSettings};
use doorman_domain::{Actor, Caller, OperatorError, ReceiptStatus, RequestId, TenantId};

use crate::cli::DatabaseArgs;

/// The operator use cases for one command.
#[derive(Debug)]
pub struct Cli {
    pub operator: Operator<PgOperatorPorts>,
    pub caller: Caller,
}

/// What the use cases need that most commands leave at its default.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    /// Seals agents' secrets (`agent set`).
    pub keys: Option<Arc<Keyring>>,
    pub destinations: DestinationPolicy,
    /// Where install links start; `None`: installs are off.
    pub install_base_url: Option<String>,
    /// Where browsers reach the operator console; `None`: no sign-in link is made.
    pub console_base_url: Option<String>,
    pub stranded_after: Option<Duration>,
    pub replay_hold: Option<Duration>,
}

impl Cli {
    /// On a small pool logged in as `DATABASE_URL`'s user, acting as it (the owner).
    pub fn owner(db: &DatabaseArgs, needs: Needs) -> Self {
        let pool = pool::connect_as(db.database_url.expose(), &small_pool(), None);
        Self::on(pool, needs)
    }

    /// The use cases on `pool`.
    pub fn on(pool: PgPool, needs: Needs) -> Self {
        let settings = OperatorSettings {
            install_base_url: needs.install_base_url,
            console_base_url: needs.console_base_url,
            stranded_after: needs.stranded_after.unwrap_or(ReceiptStatus::STRANDED_AFTER),
            replay_hold: needs.replay_hold.unwrap_or(Duration::from_secs(90)),
        };
        let ports = PgOperatorPorts::new(pool, needs.keys, needs.destinations);
        Self { operator: Operator::new(ports, settings), caller: caller() }
    }
}

/// A command's connections: it makes few requests, one at a time.
pub fn small_pool() -> PoolSettings {
    PoolSettings {
        max_size: 2,
        connection_timeout: Duration::from_secs(10),
        limits: crate::config::OPERATOR_LIMITS,
        ..PoolSettings::default()
    }
}

/// The command line, as the OS user running it, in a request of its own.
pub fn caller() -> Caller {
    let user = ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|u| !u.trim().is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    Caller { actor: Actor::Cli { user }, request: RequestId::generate() }
}

pub async fn maintenance(db: &DatabaseArgs) -> anyhow::Result<PgMaintenance> {
    PgMaintenance::connect(db.database_url.expose()).await.context("connecting to the database")
}

/// The operator error, with what to do about it when the command line knows.
pub fn explain(error: OperatorError) -> anyhow::Error {
    match error {
        OperatorError::NoAgent(tenant) => {
            anyhow::anyhow!("tenant {tenant} has no agent configured; run `doorman agent set` first")
        }
        OperatorError::UnknownTenant(tenant) => {
            anyhow::anyhow!(
                "no tenant with id {tenant}; `doorman tenant add` prints new ids, `doorman tenant list` shows them"
            )
        }
        OperatorError::InstallsOff => anyhow::anyhow!(
            "installs are off: set SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (and DOORMAN_PUBLIC_URL) as for `doorman serve`"
        ),
        OperatorError::SignInLinksOff => anyhow::anyhow!(
            "no sign-in link without the console's address: give --console-url (or set DOORMAN_CONSOLE_URL) to where browsers reach `doorman admin serve`, e.g. https://admin.example"
        ),
        other => other.into(),
    }
}

pub fn tenant_id(raw: &str) -> anyhow::Result<TenantId> {
    raw.parse().with_context(|| format!("--tenant {raw:?}"))
}

//! Replays, as both faces run them: the live path after the claim (`Inbound` over the same
//! directory, bridge, receipt store and installations as `doorman serve`, built from the same
//! dispatch settings), on a pool acting as `doorman_admin`.

use std::sync::Arc;

use doorman_adapters::bridge::HttpAgentBridge;
use doorman_adapters::postgres::{
    PgInstallations, PgOperatorPorts, PgPool, PgReceiptStore, PgStoredEvents, PgTenantDirectory,
};
use doorman_domain::ports::SystemClock;
use doorman_domain::usecases::operator::Operator;
use doorman_domain::{Caller, Inbound, OperatorError, ReplaySelection, Replayed, TenantId};

use crate::config::DispatchConfig;
use crate::server;

/// How long a replay holds its event: this much longer than a dispatch may take, so a second
/// replay of it waits for the first to have finished.
pub fn hold(dispatch_timeout: std::time::Duration) -> std::time::Duration {
    dispatch_timeout + std::time::Duration::from_secs(30)
}

/// The live path's use cases over the concrete adapters, for replays.
pub type ReplayPath =
    Inbound<PgTenantDirectory, HttpAgentBridge, PgReceiptStore, PgInstallations, SystemClock>;

/// What a replay sends with and reads from.
#[derive(Debug)]
pub struct Replays {
    inbound: ReplayPath,
    stored: PgStoredEvents,
}

impl Replays {
    /// Must be called on the runtime the replays will run on (the receipt store's writers
    /// start there).
    pub fn new(pool: PgPool, config: &DispatchConfig) -> anyhow::Result<Self> {
        let (bridge, oauth) = server::outbound(&config.bridge, config.slack_app.as_ref())?;
        let keys = config.keys.clone();
        let inbound = Inbound::new(
            PgTenantDirectory::new(pool.clone(), keys.clone()),
            bridge,
            PgReceiptStore::for_replays(pool.clone(), keys.clone()),
            PgInstallations::new(pool.clone(), keys.clone(), oauth),
            SystemClock,
            config.retention,
        );
        Ok(Self { inbound, stored: PgStoredEvents::new(pool, Arc::clone(&keys)) })
    }

    /// The operator's replay use case, over this path.
    pub async fn run(
        &self,
        operator: &Operator<PgOperatorPorts>,
        caller: &Caller,
        tenant: TenantId,
        selection: &ReplaySelection,
        dry_run: bool,
    ) -> Result<Vec<Replayed>, OperatorError> {
        operator.replay(caller, &self.inbound, &self.stored, tenant, selection, dry_run).await
    }
}

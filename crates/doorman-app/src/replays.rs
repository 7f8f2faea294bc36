//! Replays, as both faces run them: the live path after the claim (`Inbound` over the same
//! directory, bridge, receipt store and installations as `doorman serve`, built from the same
//! dispatch settings), on a pool acting as `doorman_admin` (or the owner, from the command
//! line). A replay is a job: made at once (`start`), run by the admin API's job runner in every admin process
//! (one job at a time per process, one process per job), or inline by the command line.

use std::sync::Arc;
use std::time::Duration;

use doorman_adapters::bridge::HttpAgentBridge;
use doorman_adapters::postgres::{
    PgInstallations, PgOperatorPorts, PgPool, PgReceiptStore, PgStoredEvents, PgTenantDirectory,
};
use doorman_domain::ports::SystemClock;
use doorman_domain::usecases::operator::Operator;
use doorman_domain::{
    Caller, Inbound, OperatorError, ReplayJob, ReplayJobId, ReplaySelection, Replayed, TenantId,
};
use tokio::sync::Notify;

use crate::config::DispatchConfig;

/// How long a replay holds its event: this much longer than a dispatch may take, so a second
/// replay of it waits for the first to have finished.
pub fn hold(dispatch_timeout: Duration) -> Duration {
    dispatch_timeout + Duration::from_secs(30)
}

/// The live path's use cases over the concrete adapters, for replays.
pub type ReplayPath =
    Inbound<PgTenantDirectory, HttpAgentBridge, PgReceiptStore, PgInstallations, SystemClock>;

/// What a replay sends with and reads from.
#[derive(Debug)]
pub struct Replays {
    inbound: ReplayPath,
    stored: PgStoredEvents,
    /// How long a runner holds a job between two of its events: an event's replay fits.
    job_hold: Duration,
    /// Wakes this process's runner when a job is made here.
    made: Arc<Notify>,
}

impl Replays {
    /// Must be called on the runtime the replays will run on (the receipt store's writers
    /// start there).
    pub fn new(pool: PgPool, config: &DispatchConfig) -> anyhow::Result<Self> {
        let (bridge, oauth) = crate::outbound::clients(&config.bridge, config.slack_app.as_ref())?;
        let keys = config.keys.clone();
        let inbound = Inbound::new(
            PgTenantDirectory::new(pool.clone(), keys.clone()),
            bridge,
            PgReceiptStore::for_replays(pool.clone(), keys.clone()),
            PgInstallations::new(pool.clone(), keys.clone(), oauth),
            SystemClock,
            config.retention,
        );
        Ok(Self {
            inbound,
            stored: PgStoredEvents::new(pool, Arc::clone(&keys)),
            job_hold: 2 * hold(config.bridge.dispatch_timeout),
            made: Arc::new(Notify::new()),
        })
    }

    /// What a replay of `selection` would do; nothing is sent.
    pub async fn dry_run(
        &self,
        operator: &Operator<PgOperatorPorts>,
        caller: &Caller,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> Result<Vec<Replayed>, OperatorError> {
        operator.dry_run_replay(caller, &self.inbound, &self.stored, tenant, selection).await
    }

    /// Makes the job (queued) and wakes this process's runner.
    pub async fn start(
        &self,
        operator: &Operator<PgOperatorPorts>,
        caller: &Caller,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> Result<ReplayJob, OperatorError> {
        let job = operator.start_replay(caller, &self.stored, tenant, selection, None).await?;
        self.made.notify_one();
        Ok(job)
    }

    /// Makes the job held by this caller and runs it here to its end (the command line): no
    /// admin process takes it meanwhile.
    pub async fn start_and_run(
        &self,
        operator: &Operator<PgOperatorPorts>,
        caller: &Caller,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> Result<ReplayJob, OperatorError> {
        let job = operator.start_replay(caller, &self.stored, tenant, selection, Some(self.job_hold)).await?;
        self.run(operator, tenant, job.id).await?;
        operator.replay_job(caller, tenant, job.id).await
    }

    /// Runs one job to its end, here (a job this process holds).
    pub async fn run(
        &self,
        operator: &Operator<PgOperatorPorts>,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> Result<(), OperatorError> {
        operator.run_replay_job(&self.inbound, &self.stored, tenant, id, self.job_hold).await
    }

    /// Takes the next job no process is running and runs it; `false` when there was none.
    pub async fn run_next(&self, operator: &Operator<PgOperatorPorts>) -> Result<bool, OperatorError> {
        let Some((tenant, id)) = operator.take_replay_job(self.job_hold).await? else { return Ok(false) };
        tracing::info!(tenant.id = %tenant, job.id = %id, "running a replay job");
        self.run(operator, tenant, id).await?;
        tracing::info!(tenant.id = %tenant, job.id = %id, "replay job finished");
        Ok(true)
    }

    /// Returns once a job is made in this process (its runner then takes it at once).
    pub async fn job_made_here(&self) {
        self.made.notified().await;
    }
}

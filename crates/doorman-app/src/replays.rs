//! Replays, as both faces run them: the live path after the claim (`Inbound` over the same
//! directory, bridge, receipt store and installations as `doorman serve`, built from the same
//! dispatch settings), on a pool acting as `doorman_admin` (or the owner, from the command
//! line). A replay is a job: made at once (`start`), run by [`Runner`] in every admin process
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
use tokio::sync::{Notify, watch};

use crate::config::DispatchConfig;
use crate::server;

/// How long a replay holds its event: this much longer than a dispatch may take, so a second
/// replay of it waits for the first to have finished.
pub fn hold(dispatch_timeout: Duration) -> Duration {
    dispatch_timeout + Duration::from_secs(30)
}

/// How often an idle runner looks for a job another process made.
const LOOK_EVERY: Duration = Duration::from_secs(1);

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
    async fn run_next(&self, operator: &Operator<PgOperatorPorts>) -> Result<bool, OperatorError> {
        let Some((tenant, id)) = operator.take_replay_job(self.job_hold).await? else { return Ok(false) };
        tracing::info!(tenant.id = %tenant, job.id = %id, "running a replay job");
        self.run(operator, tenant, id).await?;
        tracing::info!(tenant.id = %tenant, job.id = %id, "replay job finished");
        Ok(true)
    }
}

/// The admin process's background runner of replay jobs.
#[derive(Debug)]
pub struct Runner {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Runner {
    /// Runs jobs until stopped: those made here at once, those made elsewhere (or left by a
    /// process that stopped) within a second.
    pub fn spawn(state: Arc<crate::admin_api::AdminState>) -> Self {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                if *stopped.borrow() {
                    return;
                }
                let ran = match state.replays.run_next(&state.operator).await {
                    Ok(ran) => ran,
                    Err(error) => {
                        tracing::warn!(error = %error, "a replay job could not be run; trying again shortly");
                        false
                    }
                };
                if ran {
                    continue;
                }
                tokio::select! {
                    () = state.replays.made.notified() => {}
                    () = tokio::time::sleep(LOOK_EVERY) => {}
                    _ = stopped.changed() => return,
                }
            }
        });
        Self { stop, task }
    }

    /// Stops taking jobs; a job being run is left after the event in hand (its hold lapses and
    /// another process, or this one after a restart, resumes it), within `grace`.
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            tracing::warn!("a replay job was still running at shutdown; another process will resume it");
        }
    }
}

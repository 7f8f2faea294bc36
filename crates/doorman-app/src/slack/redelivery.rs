//! The redelivery runner (ADR 26): in every serving process, for each tenant that turned
//! redelivery on, the events due to be sent again are taken (held, counted) and handed to the
//! delivery runner's dispatch, the same path a live delivery's job takes after its answer; then
//! the events whose schedule is spent are given up.
//!
//! Live deliveries go first: redeliveries have budgets of their own (in flight per tenant and
//! in the process, and a pace: so many started per second in the process), take a place in the bridge's bounded work only when one is free, and none
//! is taken while a tenant's circuit is open. The runner looks once per `every`, and again as
//! soon as a redelivery finishes while a backlog drains (a pass that filled its budget).

use std::collections::HashMap;
use std::sync::Arc;

use doorman_adapters::postgres::{PgOperationalOutbox, PgRedeliveries};
use doorman_domain::TenantId;
use doorman_domain::ports::Redeliveries;
use doorman_domain::{OperationalEvent, OperationalKind, ScheduledTenant};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};

use super::metrics::Metrics;
use super::runner::DeliveryRunner;
use crate::config::RedeliveryConfig;

mod pace;
use pace::Pace;

/// The most spent events given up per tenant per pass.
const GIVE_UP_BATCH: u32 = 100;

/// Spent schedules are looked for once every this many lists of tenants (30 s by default): the
/// look walks every kept payload of the tenant (50 ms with 10,000 waiting), and an event given
/// up a little later loses nothing.
const GIVE_UP_EVERY_LISTS: u32 = 30;

/// The running runner; [`RedeliveryTask::stop`] ends it between two passes.
#[derive(Debug)]
pub struct RedeliveryTask {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RedeliveryTask {
    /// Starts the runner on the current runtime; `None` when the settings turn it off.
    pub fn spawn(
        runner: DeliveryRunner,
        store: PgRedeliveries,
        outbox: Option<PgOperationalOutbox>,
        metrics: Arc<Metrics>,
        config: RedeliveryConfig,
    ) -> Option<Self> {
        if config.in_flight == 0 {
            tracing::info!("redelivery is off in this process (DOORMAN_REDELIVERY_IN_FLIGHT=0)");
            return None;
        }
        let (stop, stopped) = watch::channel(false);
        let budgets = Budgets::new(config);
        let task = tokio::spawn(run(runner, store, outbox, metrics, config, budgets, stopped));
        Some(Self { stop, task })
    }

    /// Stops taking redeliveries (what was taken is dispatched and drained with the rest).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// How many redeliveries may be in flight, in the process and per tenant, and how many may
/// start this second; a finished one wakes the runner.
#[derive(Debug)]
struct Budgets {
    total: Arc<Semaphore>,
    per_tenant: HashMap<TenantId, Arc<Semaphore>>,
    per_tenant_size: usize,
    pace: Option<Pace>,
    finished: Arc<Notify>,
}

/// A redelivery's places in the budgets, given back when its dispatch ends.
struct Places {
    _total: OwnedSemaphorePermit,
    _tenant: OwnedSemaphorePermit,
    finished: Arc<Notify>,
}

impl Drop for Places {
    fn drop(&mut self) {
        self.finished.notify_one();
    }
}

impl Budgets {
    fn new(config: RedeliveryConfig) -> Self {
        let per_tenant_size = config.in_flight_per_tenant as usize;
        Self {
            total: Arc::new(Semaphore::new(config.in_flight as usize)),
            per_tenant: HashMap::new(),
            per_tenant_size,
            pace: Pace::new(config.per_second, Self::batch_of(per_tenant_size), std::time::Instant::now()),
            finished: Arc::new(Notify::new()),
        }
    }

    /// The fewest redeliveries of a tenant taken at once while others of it are in flight.
    fn batch_of(per_tenant_size: usize) -> u32 {
        u32::try_from((per_tenant_size / 2).max(1)).unwrap_or(u32::MAX)
    }

    fn tenant(&mut self, tenant: TenantId) -> Arc<Semaphore> {
        let size = self.per_tenant_size;
        self.per_tenant.entry(tenant).or_insert_with(|| Arc::new(Semaphore::new(size))).clone()
    }

    /// How many more of the tenant's redeliveries may start now: none until at least half of
    /// its budget is free (or nothing of it is in flight), so a backlog is taken in batches, not
    /// one event per statement as each redelivery ends.
    fn room(&mut self, tenant: TenantId) -> u32 {
        let budget = self.tenant(tenant);
        let free = budget.available_permits().min(self.total.available_permits());
        let free = u32::try_from(free).unwrap_or(u32::MAX);
        let free = match &mut self.pace {
            Some(pace) => free.min(pace.available(std::time::Instant::now())),
            None => free,
        };
        let idle = budget.available_permits() == self.per_tenant_size;
        if free < Self::batch_of(self.per_tenant_size) && !idle {
            return 0;
        }
        free
    }

    /// How long until the pace lets a batch start: zero without a pace or when it may now.
    fn pace_wait(&mut self) -> std::time::Duration {
        let batch = Self::batch_of(self.per_tenant_size);
        self.pace
            .as_mut()
            .map_or(std::time::Duration::ZERO, |pace| pace.wait_for(batch, std::time::Instant::now()))
    }

    /// Places for one redelivery, if both budgets have one.
    fn take(&mut self, tenant: TenantId) -> Option<Places> {
        let tenant = self.tenant(tenant).try_acquire_owned().ok()?;
        let total = self.total.clone().try_acquire_owned().ok()?;
        if let Some(pace) = &mut self.pace {
            pace.spend();
        }
        Some(Places { _total: total, _tenant: tenant, finished: self.finished.clone() })
    }

    /// Forgets the budgets of tenants no longer scheduled and with nothing in flight.
    fn keep_only(&mut self, scheduled: &[ScheduledTenant]) {
        let size = self.per_tenant_size;
        self.per_tenant.retain(|tenant, budget| {
            scheduled.iter().any(|s| s.tenant == *tenant) || budget.available_permits() < size
        });
    }
}

async fn run(
    runner: DeliveryRunner,
    store: PgRedeliveries,
    outbox: Option<PgOperationalOutbox>,
    metrics: Arc<Metrics>,
    config: RedeliveryConfig,
    mut budgets: Budgets,
    mut stopped: watch::Receiver<bool>,
) {
    let mut scheduled: Vec<ScheduledTenant> = Vec::new();
    let mut listed_at: Option<tokio::time::Instant> = None;
    let mut first = 0usize;
    let mut lists = 0u32;
    loop {
        // The list of tenants is read at most once per `every`: a backlog's quick passes reuse it.
        let stale = listed_at.is_none_or(|at| at.elapsed() >= config.every);
        let give_up_now = stale && lists.is_multiple_of(GIVE_UP_EVERY_LISTS);
        if stale {
            lists = lists.wrapping_add(1);
        }
        if stale {
            match store.scheduled().await {
                Ok(found) => {
                    budgets.keep_only(&found);
                    scheduled = found;
                    listed_at = Some(tokio::time::Instant::now());
                }
                Err(error) => {
                    tracing::warn!(error = %error, "could not list the tenants with redelivery on; trying again")
                }
            }
        }
        let mut filled = false;
        // Each pass starts with the next tenant: none waits behind another's backlog for long.
        first = if scheduled.is_empty() { 0 } else { (first + 1) % scheduled.len() };
        for tenant in scheduled.iter().cycle().skip(first).take(scheduled.len()) {
            if *stopped.borrow() {
                return;
            }
            filled |= pass(&runner, &store, &metrics, &config, &mut budgets, tenant).await;
            if give_up_now {
                give_up(&runner, &store, outbox.as_ref(), &metrics, tenant).await;
            }
        }
        // A pass held back by the pace looks again as soon as the pace allows a batch.
        let pace_wait = budgets.pace_wait();
        let wait = match filled && !pace_wait.is_zero() {
            true => tokio::time::sleep(pace_wait.min(config.every)),
            false => tokio::time::sleep(config.every),
        };
        tokio::select! {
            _ = wait => {}
            // A backlog drains as fast as the budgets allow: the next pass starts as soon as a
            // redelivery finishes.
            _ = budgets.finished.notified(), if filled => {}
            _ = stopped.changed() => return,
        }
    }
}

/// One tenant's redeliveries taken and dispatched, as many as its budgets allow; `true` when
/// it took all it asked for (more may be due).
async fn pass(
    runner: &DeliveryRunner,
    store: &PgRedeliveries,
    metrics: &Arc<Metrics>,
    config: &RedeliveryConfig,
    budgets: &mut Budgets,
    scheduled: &ScheduledTenant,
) -> bool {
    let room = budgets.room(scheduled.tenant);
    if room == 0 {
        return true;
    }
    let jobs = match runner.live_path().take_redeliveries(store, scheduled, room, config.hold).await {
        Ok(jobs) => jobs,
        Err(error) => {
            tracing::warn!(tenant.id = %scheduled.tenant, error = %error, "could not take the tenant's due redeliveries; trying again");
            return false;
        }
    };
    let took = u32::try_from(jobs.len()).unwrap_or(u32::MAX);
    for job in jobs {
        // Room was counted above and only this task takes places: there is one for each job.
        let places = budgets.take(scheduled.tenant);
        metrics.redelivery_started();
        runner.spawn_redelivery(job, places);
    }
    took == room
}

/// Gives up the tenant's spent schedules, and tells the platform of each (`event.exhausted`).
async fn give_up(
    runner: &DeliveryRunner,
    store: &PgRedeliveries,
    outbox: Option<&PgOperationalOutbox>,
    metrics: &Metrics,
    scheduled: &ScheduledTenant,
) {
    match runner.live_path().give_up_spent(store, scheduled, GIVE_UP_BATCH).await {
        Ok(given_up) => {
            metrics.redeliveries_given_up(given_up.len());
            let detail =
                format!("{} redeliveries spent without the agent taking it", scheduled.schedule.len());
            let events: Vec<OperationalEvent> = given_up
                .into_iter()
                .map(|key| OperationalEvent {
                    kind: OperationalKind::EventExhausted,
                    tenant: key.tenant,
                    external_event_id: Some(key.external_id),
                    at: chrono::Utc::now(),
                    detail: Some(detail.clone()),
                })
                .collect();
            super::operational::tell(outbox, &events).await;
        }
        Err(error) => {
            tracing::warn!(tenant.id = %scheduled.tenant, error = %error, "could not give up the tenant's spent redeliveries; trying again")
        }
    }
}

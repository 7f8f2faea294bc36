//! The redelivery runner (ADR 26): in every serving process, for each tenant that turned
//! redelivery on, the events due to be sent again are taken (held, counted) and handed to the
//! delivery runner's dispatch, the same path a live delivery's job takes after its answer; then
//! the events whose schedule is spent are given up.
//!
//! Live deliveries go first: redeliveries have budgets of their own (in flight per tenant and
//! in the process, and a pace: so many started per second in the process, on average), take a
//! place in the bridge's bounded work only when one is free, and none is taken while a tenant's
//! circuit is open. The runner looks once per `every`, and while a backlog drains again as soon
//! as a redelivery finishes or the pace allows a batch.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        let budgets = Budgets::new(config, Instant::now());
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
    fn new(config: RedeliveryConfig, now: Instant) -> Self {
        let per_tenant_size = config.in_flight_per_tenant as usize;
        Self {
            total: Arc::new(Semaphore::new(config.in_flight as usize)),
            per_tenant: HashMap::new(),
            per_tenant_size,
            pace: Pace::new(config.per_second, Self::batch_of(per_tenant_size), now),
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

    /// How many more of the tenant's redeliveries may start at `now`: none until a batch may
    /// (half of its budget free, or all of it while nothing of it is in flight, and as many
    /// allowed by the pace), so a backlog is taken in batches, not one event per statement as
    /// each redelivery ends or each token comes. Never more than the pace allows: [`Self::take`]
    /// spends a token for each.
    fn room(&mut self, tenant: TenantId, now: Instant) -> u32 {
        let budget = self.tenant(tenant);
        let idle = budget.available_permits() == self.per_tenant_size;
        let free = budget.available_permits().min(self.total.available_permits());
        let free = u32::try_from(free).unwrap_or(u32::MAX);
        let batch = Self::batch_of(self.per_tenant_size);
        if free < batch && !idle {
            return 0;
        }
        let Some(pace) = &mut self.pace else { return free };
        let allowed = pace.available(now);
        if allowed < batch.min(free) {
            return 0;
        }
        free.min(allowed)
    }

    /// How long from `now` until the pace lets a batch start: zero without a pace or when it
    /// may now.
    fn pace_wait(&mut self, now: Instant) -> Duration {
        let batch = Self::batch_of(self.per_tenant_size);
        self.pace.as_mut().map_or(Duration::ZERO, |pace| pace.wait_for(batch, now))
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
        let mut held_back = false;
        // Each pass starts with the next tenant: none waits behind another's backlog for long.
        first = if scheduled.is_empty() { 0 } else { (first + 1) % scheduled.len() };
        for tenant in scheduled.iter().cycle().skip(first).take(scheduled.len()) {
            if *stopped.borrow() {
                return;
            }
            held_back |= pass(&runner, &store, &metrics, &config, &mut budgets, tenant).await;
            if give_up_now {
                give_up(&runner, &store, outbox.as_ref(), &metrics, tenant).await;
            }
        }
        // A pass held back by the pace looks again as soon as the pace allows a batch.
        let pace_wait = budgets.pace_wait(Instant::now());
        let wait = if held_back && !pace_wait.is_zero() {
            tokio::time::sleep(pace_wait.min(config.every))
        } else {
            tokio::time::sleep(config.every)
        };
        tokio::select! {
            _ = wait => {}
            // A backlog drains as fast as the budgets allow: the next pass starts as soon as a
            // redelivery finishes.
            _ = budgets.finished.notified(), if held_back => {}
            _ = stopped.changed() => return,
        }
    }
}

/// One tenant's redeliveries taken and dispatched, as many as its budgets and the pace allow;
/// `true` when they held it back (it took all it asked for, or asked for none): more may be
/// due, to be looked for as soon as a redelivery ends or the pace allows a batch.
async fn pass(
    runner: &DeliveryRunner,
    store: &PgRedeliveries,
    metrics: &Arc<Metrics>,
    config: &RedeliveryConfig,
    budgets: &mut Budgets,
    scheduled: &ScheduledTenant,
) -> bool {
    let room = budgets.room(scheduled.tenant, Instant::now());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(per_second: u32) -> RedeliveryConfig {
        RedeliveryConfig {
            every: Duration::from_secs(1),
            in_flight: 32,
            in_flight_per_tenant: 8,
            per_second,
            hold: Duration::from_secs(90),
        }
    }

    fn tenant() -> TenantId {
        TenantId::from_uuid(uuid::Uuid::from_u128(41))
    }

    #[test]
    fn the_pace_caps_the_room_and_every_place_taken_spends_from_it() {
        let start = Instant::now();
        let mut budgets = Budgets::new(config(10), start);
        // The budget (8) is less than the pace's first second (10).
        assert_eq!(budgets.room(tenant(), start), 8);
        let places: Vec<Places> = (0..8).map(|_| budgets.take(tenant()).expect("a place")).collect();
        drop(places);
        // Two left: fewer than a batch (4), so none until the pace allows one.
        assert_eq!(budgets.room(tenant(), start), 0);
        assert_eq!(budgets.pace_wait(start), Duration::from_millis(200));
        let later = start + Duration::from_millis(200);
        assert_eq!(budgets.room(tenant(), later), 4);
        assert_eq!(budgets.pace_wait(later), Duration::ZERO);
    }

    #[test]
    fn without_a_pace_only_the_in_flight_budgets_count() {
        let start = Instant::now();
        let mut budgets = Budgets::new(config(0), start);
        for _ in 0..5 {
            let places: Vec<Places> = (0..8).map(|_| budgets.take(tenant()).expect("a place")).collect();
            assert_eq!(budgets.room(tenant(), start), 0, "its whole budget is in flight");
            drop(places);
            assert_eq!(budgets.room(tenant(), start), 8);
        }
        assert_eq!(budgets.pace_wait(start), Duration::ZERO);
    }

    #[test]
    fn a_tenant_with_redeliveries_in_flight_waits_for_half_its_budget() {
        let start = Instant::now();
        let mut budgets = Budgets::new(config(0), start);
        let mut places: Vec<Places> = (0..5).map(|_| budgets.take(tenant()).expect("a place")).collect();
        assert_eq!(budgets.room(tenant(), start), 0, "3 free: less than a batch of 4");
        places.pop();
        assert_eq!(budgets.room(tenant(), start), 4);
    }
}

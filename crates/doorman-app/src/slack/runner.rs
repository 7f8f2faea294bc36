//! The delivery runner: runs each delivery's acknowledgement, and then its dispatch, on the
//! main runtime, and tracks them so shutdown can drain them.
//!
//! actix-web answers on its own worker threads, each with a runtime of its own. The use
//! cases do not run there: each delivery is handed to a task on the main runtime that
//! acknowledges it and, if accepted, starts its dispatch. Two things follow. The database
//! connections and the dispatches live on one runtime that outlives the HTTP workers at
//! shutdown, so draining can finish them. And a claim, once made, is always followed by its
//! dispatch even if Slack hangs up before hearing the answer: the task does not belong to
//! the request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use doorman_adapters::bridge::HttpAgentBridge;
use doorman_adapters::notified_directory::NotifiedDirectory;
use doorman_adapters::postgres::{PgInstallations, PgReceiptStore, PgTenantDirectory};
use doorman_domain::Job;
use doorman_domain::ports::SystemClock;
use doorman_domain::{Acknowledgement, Inbound, InboundEvent, Unavailability};
use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::activity::ActivityCounts;
use super::metrics::Metrics;

/// The live path's use cases over the concrete adapters, fixed once here.
pub type LivePath = Inbound<
    NotifiedDirectory<PgTenantDirectory>,
    HttpAgentBridge,
    PgReceiptStore,
    PgInstallations,
    SystemClock,
>;

#[derive(Debug, Clone)]
pub struct DeliveryRunner {
    doorman: Arc<LivePath>,
    metrics: Arc<Metrics>,
    /// Each dispatch's outcome, counted for the activity rollup (no statement per event).
    activity: Arc<ActivityCounts>,
    runtime: Handle,
    tracker: TaskTracker,
}

impl DeliveryRunner {
    /// Must be created on the main runtime: its tasks run there.
    pub fn new(doorman: LivePath, metrics: Arc<Metrics>, activity: Arc<ActivityCounts>) -> Self {
        Self {
            doorman: Arc::new(doorman),
            metrics,
            activity,
            runtime: Handle::current(),
            tracker: TaskTracker::new(),
        }
    }

    pub fn live_path(&self) -> &LivePath {
        &self.doorman
    }

    /// Acknowledges a delivery on the main runtime; an accepted one starts its dispatch
    /// there before this returns, whether or not the caller is still waiting.
    pub async fn acknowledge(&self, event: InboundEvent) -> Acknowledgement {
        let this = self.clone();
        let task = self.runtime.spawn(
            self.tracker.track_future(
                async move {
                    let (acknowledgement, job) = this.doorman.acknowledge(event).await.into_parts();
                    if let Some(job) = job {
                        this.spawn_dispatch(job);
                    }
                    acknowledgement
                }
                .in_current_span(),
            ),
        );
        task.await.unwrap_or_else(|error| {
            tracing::error!(error = %error, "acknowledgement task failed; answered 503 so Slack retries");
            Acknowledgement::Unavailable(Unavailability::Internal)
        })
    }

    fn spawn_dispatch(&self, job: Job) {
        self.spawn_handle(job, ());
    }

    /// Dispatches a redelivery the runner took, like a live delivery's job; `places` (its
    /// budgets' places) are held until its outcome is written.
    pub fn spawn_redelivery(&self, job: Job, places: impl Send + 'static) {
        self.spawn_handle(job, places);
    }

    fn spawn_handle(&self, job: Job, held: impl Send + 'static) {
        // At debug level: every line logged in a dispatch names its tenant and event itself, and
        // an info-level span (its fields formatted at creation) cost ~2% of the CPU per event.
        let span = tracing::debug_span!(
            "dispatch",
            tenant.id = %job.tenant(),
            event.id = job.event().external_id.as_ref().map(|id| id.as_str()),
            event.kind = job.event().kind.name(),
        );
        let doorman = self.doorman.clone();
        let metrics = self.metrics.clone();
        let activity = self.activity.clone();
        let tenant = job.tenant();
        // Counted before the HTTP answer, so a caller that has its answer and then reads
        // `doorman_dispatches_in_flight` as 0 knows every dispatch it caused has finished.
        metrics.dispatch_started();
        self.runtime.spawn(self.tracker.track_future(
            async move {
                let started = Instant::now();
                let redelivery = job.event().delivery.redelivery;
                let handled = doorman.handle(job).await;
                tracing::debug!(outcome = ?handled, elapsed_ms = started.elapsed().as_millis() as u64, "dispatch finished");
                metrics.dispatch_finished(&handled, started.elapsed());
                activity.record(tenant, chrono::Utc::now(), &handled, started.elapsed());
                if redelivery > 0 {
                    metrics.redelivery_finished(&handled);
                }
                drop(held);
            }
            .instrument(span),
        ));
    }

    /// Dispatches (and acknowledgements) still running.
    pub fn in_flight(&self) -> usize {
        self.tracker.len()
    }

    /// Waits up to `timeout` for everything in flight; returns how many did not finish.
    /// Those stay visible as stranded receipts (decision 3).
    pub async fn drain(&self, timeout: Duration) -> usize {
        self.tracker.close();
        match tokio::time::timeout(timeout, self.tracker.wait()).await {
            Ok(()) => 0,
            Err(_) => self.tracker.len(),
        }
    }
}

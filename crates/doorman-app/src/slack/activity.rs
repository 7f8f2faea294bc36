//! Activity counted as dispatches end (issue 42): each dispatch's outcome and time are added to
//! this process's counts by tenant and hour, in memory (a lock held for a map update: no
//! statement on the hot path), and the counts are added to the rollup every
//! [`FLUSH_EVERY`] in one statement, and once more at shutdown. A flush that fails keeps its
//! counts for the next one; a process killed loses at most its last few seconds of counts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use doorman_adapters::postgres::PgActivity;
use doorman_domain::{ActivityHour, Handled, TenantId, hour_of};

/// How often the counts are added to the rollup.
pub const FLUSH_EVERY: Duration = Duration::from_secs(10);

/// How long the rollup keeps a tenant's hours: the longest chart (7 days) and a day more.
const KEEP_FOR: chrono::Duration = chrono::Duration::days(8);

/// This process's counts since its last flush.
#[derive(Debug, Default)]
pub struct ActivityCounts {
    hours: Mutex<HashMap<(TenantId, DateTime<Utc>), ActivityHour>>,
}

impl ActivityCounts {
    /// A dispatch of `tenant`'s ended at `at` after `took`: counted as delivered or failed.
    /// What sent nothing (a claim held elsewhere, an unsettled one) is not a dispatch.
    pub fn record(&self, tenant: TenantId, at: DateTime<Utc>, handled: &Handled, took: Duration) {
        let delivered = match handled {
            Handled::Delivered { .. } | Handled::DeliveredUnrecorded(_) => true,
            Handled::Failed { .. } => false,
            Handled::NotSent(_) => return,
        };
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let hour = hour_of(at);
        let mut hours = self.lock();
        let counted = hours.entry((tenant, hour)).or_insert_with(|| ActivityHour::empty(hour));
        if delivered {
            counted.delivered += 1;
        } else {
            counted.failed += 1;
        }
        counted.dispatch_ms = counted.dispatch_ms.saturating_add(ms);
        counted.dispatch_ms_max = counted.dispatch_ms_max.max(u32::try_from(ms).unwrap_or(u32::MAX));
    }

    /// Everything counted, taken out (in the rollup's key order).
    fn take(&self) -> Vec<(TenantId, ActivityHour)> {
        let mut taken: Vec<_> =
            std::mem::take(&mut *self.lock()).into_iter().map(|((tenant, _), hour)| (tenant, hour)).collect();
        taken.sort_by_key(|(tenant, hour)| (*tenant.as_uuid(), hour.hour));
        taken
    }

    /// Counts a flush could not write, added back to what was counted meanwhile.
    fn put_back(&self, counts: Vec<(TenantId, ActivityHour)>) {
        let mut hours = self.lock();
        for (tenant, back) in counts {
            let counted = hours.entry((tenant, back.hour)).or_insert_with(|| ActivityHour::empty(back.hour));
            counted.delivered += back.delivered;
            counted.failed += back.failed;
            counted.dispatch_ms = counted.dispatch_ms.saturating_add(back.dispatch_ms);
            counted.dispatch_ms_max = counted.dispatch_ms_max.max(back.dispatch_ms_max);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(TenantId, DateTime<Utc>), ActivityHour>> {
        self.hours.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds what was counted to the rollup; on failure keeps it for the next flush.
    pub async fn flush(&self, rollup: &PgActivity) {
        let counts = self.take();
        if counts.is_empty() {
            return;
        }
        if let Err(error) = rollup.add(&counts, Utc::now() - KEEP_FOR).await {
            tracing::warn!(error = %error, hours = counts.len(), "the activity counts could not be added to the rollup; kept for the next flush");
            self.put_back(counts);
        }
    }
}

/// The task that flushes a process's counts every [`FLUSH_EVERY`].
#[derive(Debug)]
pub struct Flusher {
    stop: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Flusher {
    /// Stops the task once a flush it is in has ended (never in the middle of one: a flush
    /// cut short after taking the counts would lose them), for the shutdown's last flush.
    pub async fn stop(self) {
        self.stop.notify_one();
        let _ = self.task.await;
    }
}

/// Flushes `counts` every [`FLUSH_EVERY`] until stopped ([`Flusher::stop`]; the shutdown
/// flushes once more).
pub fn spawn(counts: Arc<ActivityCounts>, rollup: PgActivity) -> Flusher {
    let stop = Arc::new(tokio::sync::Notify::new());
    let stopped = stop.clone();
    let task = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(FLUSH_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // A stop asked for during a flush is kept (`notify_one`) and seen after it.
                () = stopped.notified() => return,
                _ = ticks.tick() => counts.flush(&rollup).await,
            }
        }
    });
    Flusher { stop, task }
}

#[cfg(test)]
mod tests {
    use doorman_domain::{DispatchError, NotSent, StorageError};

    use super::*;

    #[test]
    fn dispatches_are_counted_by_tenant_and_hour_and_what_sent_nothing_is_not() {
        let counts = ActivityCounts::default();
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let at: DateTime<Utc> = "2026-12-06T10:15:00Z".parse().unwrap();
        let failed = Handled::Failed { error: DispatchError::TimedOut(60), recorded: true };
        counts.record(a, at, &Handled::Delivered { pruned: 0 }, Duration::from_millis(40));
        counts.record(a, at, &failed, Duration::from_millis(100));
        counts.record(
            a,
            at + chrono::Duration::hours(1),
            &Handled::Delivered { pruned: 0 },
            Duration::from_millis(5),
        );
        counts.record(b, at, &Handled::NotSent(NotSent::ClaimedElsewhere), Duration::from_millis(5));
        counts.record(
            b,
            at,
            &Handled::DeliveredUnrecorded(StorageError::Unavailable("x".into())),
            Duration::ZERO,
        );
        let mut taken = counts.take();
        taken.sort_by_key(|(tenant, hour)| (*tenant == b, hour.hour));
        let hour: DateTime<Utc> = "2026-12-06T10:00:00Z".parse().unwrap();
        assert_eq!(
            taken,
            [
                (
                    a,
                    ActivityHour {
                        delivered: 1,
                        failed: 1,
                        dispatch_ms: 140,
                        dispatch_ms_max: 100,
                        ..ActivityHour::empty(hour)
                    }
                ),
                (
                    a,
                    ActivityHour {
                        delivered: 1,
                        dispatch_ms: 5,
                        dispatch_ms_max: 5,
                        ..ActivityHour::empty(hour + chrono::Duration::hours(1))
                    }
                ),
                (b, ActivityHour { delivered: 1, ..ActivityHour::empty(hour) }),
            ]
        );
        assert!(counts.take().is_empty(), "taken out");
        counts.put_back(taken[..1].to_vec());
        counts.record(a, at, &Handled::Delivered { pruned: 0 }, Duration::from_millis(1));
        assert_eq!(counts.take()[0].1.delivered, 2, "put back and counted again");
    }
}

//! The receipts watch: once a minute, every tenant's stranded and recently failed receipts
//! counted into gauges, and whether the database is ready, so alerts can page on losses the
//! design makes visible (deploy/prometheus/alerts.yml). One small query per process per
//! minute whatever the traffic: a sweep of the receipts claimed since the last one, then two
//! counts on the indexes of swept and of failed receipts (decision 18).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use doorman_adapters::postgres::{PgPool, migrations, receipts};

use super::metrics::Metrics;

/// How often the counts are taken (and so the most they cost).
pub const EVERY: Duration = Duration::from_secs(60);
/// Unfinished for longer than this: stranded (the `receipts stranded` default).
pub const STRANDED_AFTER: Duration = Duration::from_secs(10 * 60);
/// Failures counted as recent.
pub const FAILED_WITHIN: Duration = Duration::from_secs(60 * 60);

/// Counts now, then every [`EVERY`], until the task is aborted.
pub fn spawn(pool: PgPool, metrics: Arc<Metrics>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            watch_once(&pool, &metrics).await;
        }
    })
}

async fn watch_once(pool: &PgPool, metrics: &Metrics) {
    let ready = matches!(migrations::readiness(pool).await, Ok(migrations::Readiness::Ready));
    if !ready {
        metrics.readiness(false);
        return;
    }
    let now = Utc::now();
    let ago = |d: Duration| now - chrono::Duration::from_std(d).unwrap_or_default();
    match receipts::receipt_counts(pool, ago(STRANDED_AFTER), ago(FAILED_WITHIN)).await {
        Ok(counts) => metrics.receipt_counts(counts.stranded, counts.failed_recent),
        Err(error) => {
            tracing::warn!(error = %error, "could not count stranded and failed receipts; the gauges keep their last values")
        }
    }
    // Ready once the counts are in: a scrape that says ready has them.
    metrics.readiness(true);
}

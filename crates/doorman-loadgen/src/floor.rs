//! The floor: what one numbered event costs the database — resolve, claim, complete —
//! through the very adapters the server uses (the directory served from memory with its
//! listener, claims and completions in groups), straight at the same database, at the same
//! concurrency and with the same two pools, with no HTTP and no dispatch. The service cannot
//! beat it; the ratio says how much of the database's capacity the rest of Doorman leaves on
//! the table. It also times resolve + claim, the work inside an acknowledgement: no
//! acknowledgement can be faster than that at this concurrency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use doorman_adapters::notified_directory::NotifiedDirectory;
use doorman_adapters::postgres::{PgReceiptStore, PgTenantDirectory, PoolSettings, listener, pool};
use doorman_domain::ports::{ReceiptStore, TenantDirectory};
use doorman_domain::{
    Claim, ClaimId, Delivered, ExternalEventId, Label, NewReceipt, Platform, ReceiptKey, WorkspaceId,
    WorkspaceRef,
};
use doorman_testkit::database::test_keys;
use hdrhistogram::Histogram;

use crate::Args;
use crate::cpu;
use crate::setup::Run;

#[derive(Debug)]
pub struct FloorResult {
    pub events: usize,
    pub elapsed: Duration,
    /// resolve + claim, microseconds.
    pub ack_sql: Histogram<u64>,
    /// PostgreSQL's CPU time over the floor, if readable.
    pub pg_cpu: Option<Duration>,
}

pub async fn run(args: &Args, run: &Run, concurrency: usize) -> anyhow::Result<FloorResult> {
    let sized = |max_size| PoolSettings {
        max_size,
        connection_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let acks = pool::connect(&run.serve_url, &sized(args.pool_size));
    let background = pool::connect(&run.serve_url, &sized(args.background_pool_size));
    let directory = NotifiedDirectory::new(PgTenantDirectory::new(acks.clone(), Arc::new(test_keys())));
    let listener = listener::spawn(&run.serve_url, directory.notices());
    while !directory.status().is_listening() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let directory = Arc::new(directory);
    let receipts = Arc::new(PgReceiptStore::with_pools(acks, background, Arc::new(test_keys())));
    let ack_sql = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?));
    let teams: Arc<Vec<WorkspaceRef>> = Arc::new(
        run.tenants.iter().map(|(_, team)| WorkspaceRef::team(WorkspaceId::new(team).unwrap())).collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let events = args.events;
    let run_id = run.run_id.clone();

    let cpu_before = cpu::postgres();
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (directory, receipts, teams, next, run_id, ack_sql) = (
                directory.clone(),
                receipts.clone(),
                teams.clone(),
                next.clone(),
                run_id.clone(),
                ack_sql.clone(),
            );
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= events {
                        return Ok::<(), anyhow::Error>(());
                    }
                    let workspace = &teams[i % teams.len()];
                    let started = Instant::now();
                    let tenant = directory
                        .resolve(Platform::Slack, workspace)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("workspace not found"))?;
                    let key = ReceiptKey {
                        tenant: tenant.id,
                        platform: Platform::Slack,
                        external_id: ExternalEventId::new(format!("Floor{run_id}{i:07}"))?,
                    };
                    let now = chrono::Utc::now();
                    let receipt = NewReceipt {
                        key: key.clone(),
                        claim: ClaimId::generate(),
                        event_type: Label::new("event type", "app_mention")?,
                        attempt: 0,
                        claimed_at: now,
                        retained: None,
                    };
                    let claim = receipts.claim(&receipt).await?;
                    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX).max(1);
                    let _ = ack_sql.lock().unwrap().record(micros);
                    if claim == Claim::Claimed {
                        let delivered =
                            Delivered { started_at: now, ended_at: now, status: 200, replay: false };
                        receipts.complete(&key, &delivered, now - chrono::Duration::days(7), 500).await?;
                    }
                }
            })
        })
        .collect();
    for worker in futures_util::future::join_all(workers).await {
        worker??;
    }
    let elapsed = started.elapsed();
    let pg_cpu = cpu_before.zip(cpu::postgres()).map(|(before, after)| after.saturating_sub(before));
    listener.abort();
    let ack_sql = ack_sql.lock().unwrap().clone();
    Ok(FloorResult { events, elapsed, ack_sql, pg_cpu })
}

//! A backlog of due redeliveries, written the way the server writes failed events: claims with
//! the payload kept (sealed by the adapters, with the keys the server opens them with), then
//! each dispatch's failure recorded. Plain SQL inserts could get the sealing or the receipt's
//! columns subtly wrong; through [`PgReceiptStore`](doorman_adapters::postgres::PgReceiptStore)
//! the runner reopens exactly what a live claim would have kept.
//!
//! The tenant's schedule stays off while the backlog is written, so the runner takes none of it
//! early; [`turn_on`] makes every event due at once, just before the window opens.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_adapters::postgres::{PoolSettings, pool};
use doorman_domain::ports::ReceiptStore;
use doorman_domain::{
    AttemptRecord, Claim, ClaimId, ExternalEventId, FailureKind, Label, NewReceipt, Payload, Platform,
    ReceiptKey, TenantId,
};
use doorman_testkit::database::receipt_store;

use crate::load::event_body;
use crate::setup::Run;

/// The backlog tenant's schedule: a first delay of 1 s, long past for an event that failed an
/// hour ago, so every event is due the moment the schedule is on.
const SCHEDULE: &str = "{1,2,4}";

/// How long ago the seeded events failed.
const FAILED_AGO: chrono::Duration = chrono::Duration::hours(1);

/// Concurrent writers: enough for the adapters' group commit to batch them, as live claims are.
const WRITERS: usize = 32;

/// Writes `count` failed events of `tenant` (whose workspace is `team`), each with its payload
/// kept, and returns how long that took (before the window: neither in its time nor its CPU).
pub async fn failed_events(
    run: &Run,
    tenant: TenantId,
    team: &str,
    count: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let settings =
        PoolSettings { max_size: 8, connection_timeout: Duration::from_secs(30), ..Default::default() };
    // As the server logs in, so row-level security and the grants are the server's.
    let store = Arc::new(receipt_store(pool::connect(&run.serve_url, &settings)));
    let failed_at = chrono::Utc::now() - FAILED_AGO;
    let prefix = format!("Ev{}R", run.run_id);
    let next = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (store, next, prefix, team) = (store.clone(), next.clone(), prefix.clone(), team.to_owned());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(());
                    }
                    let id = format!("{prefix}{i:07}");
                    let key = ReceiptKey {
                        tenant,
                        platform: Platform::Slack,
                        external_id: ExternalEventId::new(&id)?,
                    };
                    let receipt = NewReceipt {
                        key: key.clone(),
                        claim: ClaimId::generate(),
                        event_type: Label::new("event type", "app_mention")?,
                        attempt: 0,
                        claimed_at: failed_at - chrono::Duration::milliseconds(50),
                        retained: Some(Payload::from_json_text(event_body(&team, &id, 600))),
                    };
                    anyhow::ensure!(
                        store.claim(&receipt).await? == Claim::Claimed,
                        "{id} was already claimed"
                    );
                    store.record_failure(&key, &agent_answered_503(failed_at)).await?;
                }
            })
        })
        .collect();
    for writer in futures_util::future::join_all(writers).await {
        writer??;
    }
    Ok(started.elapsed())
}

/// A first dispatch the agent answered 503, ending at `at`.
fn agent_answered_503(at: chrono::DateTime<chrono::Utc>) -> AttemptRecord {
    AttemptRecord {
        started_at: at - chrono::Duration::milliseconds(40),
        ended_at: at,
        replay: false,
        status: Some(503),
        failure: Some(FailureKind::Status),
        reason: Some("agent answered HTTP 503".to_owned()),
        answer: None,
    }
}

/// Turns redelivery on for `tenant` (as its owner sets it, in SQL): the runner lists it within
/// `DOORMAN_REDELIVERY_EVERY` and finds every seeded event due.
pub async fn turn_on(run: &Run, tenant: TenantId) -> anyhow::Result<()> {
    let mut conn = AsyncPgConnection::establish(&run.database_url).await?;
    diesel::sql_query("UPDATE tenants SET redelivery_schedule = $1::int4[] WHERE id = $2")
        .bind::<Text, _>(SCHEDULE)
        .bind::<SqlUuid, _>(tenant.as_uuid())
        .execute(&mut conn)
        .await?;
    Ok(())
}

/// The tenant's receipts not handled yet: what is left of its backlog.
pub async fn left(run: &Run, tenant: TenantId) -> anyhow::Result<usize> {
    #[derive(diesel::QueryableByName)]
    struct Unhandled {
        #[diesel(sql_type = BigInt)]
        unhandled: i64,
    }
    let mut conn = AsyncPgConnection::establish(&run.database_url).await?;
    let row: Unhandled = diesel::sql_query(
        "SELECT count(*) AS unhandled FROM messaging_event_receipts WHERE tenant_id = $1 AND handled_at IS NULL",
    )
    .bind::<SqlUuid, _>(tenant.as_uuid())
    .get_result(&mut conn)
    .await?;
    Ok(usize::try_from(row.unhandled).unwrap_or(0))
}

//! The service run: signed deliveries at a fixed concurrency, then the accounting.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use doorman_testkit::slack::sign;
use hdrhistogram::Histogram;
use tokio::sync::Semaphore;

use crate::Args;
use crate::cpu;
use crate::plan::{self, Item, Kind};
use crate::setup::{Run, SIGNING_SECRET};

#[derive(Debug)]
pub struct ServiceResult {
    pub deliveries: u64,
    /// Answers by status; 0 counts requests that got no answer at all.
    pub statuses: BTreeMap<u16, u64>,
    /// Acknowledgement latency, microseconds.
    pub latency: Histogram<u64>,
    /// Until the last answer.
    pub answered_in: Duration,
    /// Until the last dispatch reached the agent.
    pub handled_in: Duration,
    /// PostgreSQL's CPU time over the run (until the last dispatch), if readable.
    pub pg_cpu: Option<Duration>,
    pub numbered_acked: usize,
    pub commands_acked: usize,
    pub commands_dispatched: usize,
    /// Numbered events dispatched more than once, and the extra dispatches.
    pub doubled_events: usize,
    pub extra_dispatches: usize,
    /// Numbered events acknowledged but never dispatched.
    pub lost: usize,
    /// Receipts claimed, never handled, no failure, at the end.
    pub stranded: usize,
    pub failed: usize,
}

struct Tally {
    latency: Mutex<Histogram<u64>>,
    statuses: Mutex<BTreeMap<u16, u64>>,
    acked: Mutex<HashSet<String>>,
    commands_acked: AtomicUsize,
}

pub async fn run(
    args: &Args,
    run: &Run,
    concurrency: usize,
    payload_bytes: usize,
) -> anyhow::Result<ServiceResult> {
    let items = plan::build(
        &run.run_id,
        args.events,
        run.tenants.len(),
        args.redeliver_share,
        args.command_share,
        args.seed,
    );
    doorman_adapters::outbound::install_crypto_provider();
    let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build()?;
    let base = run.server.as_ref().expect("server running").base().to_owned();
    let permits = Arc::new(Semaphore::new(concurrency));
    let tally = Arc::new(Tally {
        latency: Mutex::new(Histogram::new_with_bounds(1, 60_000_000, 3)?),
        statuses: Mutex::default(),
        acked: Mutex::default(),
        commands_acked: AtomicUsize::new(0),
    });
    let teams: Arc<Vec<String>> = Arc::new(run.tenants.iter().map(|(_, team)| team.clone()).collect());

    let cpu_before = cpu::postgres();
    let started = Instant::now();
    let tasks: Vec<_> = items
        .into_iter()
        .map(|item| {
            let sender = Sender {
                client: client.clone(),
                base: base.clone(),
                permits: permits.clone(),
                tally: tally.clone(),
            };
            let team = teams[item.tenant].clone();
            tokio::spawn(async move { sender.deliver(item, &team, payload_bytes).await })
        })
        .collect();
    futures_util::future::join_all(tasks).await;
    let answered_in = started.elapsed();

    let numbered_acked = tally.acked.lock().unwrap().len();
    let commands_acked = tally.commands_acked.load(Ordering::Relaxed);
    let expected = numbered_acked + commands_acked;
    let mut last = (run.agent.count(), Instant::now());
    while run.agent.count() < expected && last.1.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if run.agent.count() != last.0 {
            last = (run.agent.count(), Instant::now());
        }
    }
    let handled_in = started.elapsed();
    let pg_cpu = cpu_before.zip(cpu::postgres()).map(|(before, after)| after.saturating_sub(before));

    let mut per_event: HashMap<String, usize> = HashMap::new();
    let mut commands_dispatched = 0;
    for received in run.agent.received() {
        match received.external_event_id {
            Some(id) if id.starts_with(&format!("Ev{}", run.run_id)) => {
                *per_event.entry(id).or_default() += 1
            }
            None if received.kind == "slash_command" => commands_dispatched += 1,
            _ => {}
        }
    }
    let acked = tally.acked.lock().unwrap().clone();
    let lost = acked.iter().filter(|id| !per_event.contains_key(*id)).count();
    let doubled_events = per_event.values().filter(|n| **n > 1).count();
    let extra_dispatches = per_event.values().map(|n| n.saturating_sub(1)).sum();

    // Completion follows the agent's answer; give the last ones a moment to commit.
    let (mut stranded, mut failed) = unfinished(&run.database_url).await?;
    for _ in 0..100 {
        if stranded == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        (stranded, failed) = unfinished(&run.database_url).await?;
    }

    let latency = tally.latency.lock().unwrap().clone();
    let statuses = tally.statuses.lock().unwrap().clone();
    Ok(ServiceResult {
        deliveries: statuses.values().sum(),
        statuses,
        latency,
        answered_in,
        handled_in,
        pg_cpu,
        numbered_acked,
        commands_acked,
        commands_dispatched,
        doubled_events,
        extra_dispatches,
        lost,
        stranded,
        failed,
    })
}

struct Sender {
    client: reqwest::Client,
    base: String,
    permits: Arc<Semaphore>,
    tally: Arc<Tally>,
}

impl Sender {
    async fn deliver(&self, item: Item, team: &str, payload_bytes: usize) {
        match item.kind {
            Kind::Command { trigger } => {
                // A trigger id of its own, as Slack's commands have: otherwise two commands in
                // the same second would be one signed request, and the second a replay.
                let body = format!(
                    "team_id={team}&command=%2Fask&text=hello&user_id=U1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx&trigger_id={}",
                    trigger
                );
                if self
                    .send("/slack/commands", "application/x-www-form-urlencoded", body.into_bytes(), 0)
                    .await
                {
                    self.tally.commands_acked.fetch_add(1, Ordering::Relaxed);
                }
            }
            Kind::Event { id, concurrent, later } => {
                let body = event_body(team, &id, payload_bytes).into_bytes();
                // The original and its concurrent re-deliveries race each other.
                let sends = (0..=concurrent)
                    .map(|attempt| self.send("/slack/events", "application/json", body.clone(), attempt));
                let mut acked = futures_util::future::join_all(sends).await.into_iter().any(|ok| ok);
                // Later re-deliveries: Slack's minute-later schedule, compressed.
                for n in 0..later {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    acked |= self
                        .send("/slack/events", "application/json", body.clone(), concurrent + 1 + n)
                        .await;
                }
                if acked {
                    self.tally.acked.lock().unwrap().insert(id);
                }
            }
        }
    }

    /// One signed request; true on 2xx.
    async fn send(&self, route: &str, content_type: &str, body: Vec<u8>, attempt: u32) -> bool {
        let _permit = self.permits.acquire().await.expect("semaphore open");
        let timestamp = chrono::Utc::now().timestamp();
        let mut request = self
            .client
            .post(format!("{}{route}", self.base))
            .header("content-type", content_type)
            .header("x-slack-request-timestamp", timestamp.to_string())
            .header("x-slack-signature", sign(SIGNING_SECRET, timestamp, &body))
            .timeout(Duration::from_secs(10));
        if attempt > 0 {
            request = request
                .header("x-slack-retry-num", attempt.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        let started = Instant::now();
        let status = match request.body(body).send().await {
            Ok(response) => response.status().as_u16(),
            Err(_) => 0,
        };
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX).max(1);
        let _ = self.tally.latency.lock().unwrap().record(micros);
        *self.tally.statuses.lock().unwrap().entry(status).or_default() += 1;
        (200..300).contains(&status)
    }
}

/// An `app_mention` envelope padded with message text to about `size` bytes.
pub(crate) fn event_body(team: &str, event_id: &str, size: usize) -> String {
    let mut body = serde_json::json!({
        "token": "XXYYZZ", "team_id": team, "api_app_id": "A0MDYCDME",
        "event": {"type": "app_mention", "user": "U061F7AUR", "text": "", "ts": "1515449522.000016",
                  "channel": "C0LAN2Q65", "event_ts": "1515449522.000016"},
        "type": "event_callback", "event_id": event_id, "event_time": 1515449522,
        "authorizations": [{"enterprise_id": null, "team_id": team, "user_id": "U0LAN0Z89", "is_bot": true,
                            "is_enterprise_install": false}]
    });
    let padding = size.saturating_sub(body.to_string().len());
    body["event"]["text"] = serde_json::Value::String("x".repeat(padding));
    body.to_string()
}

/// Receipts never handled: without a failure (stranded) and with one (failed). Plain SQL on
/// columns every schema version has, so an earlier revision's database (`--compare`) reads too.
pub(crate) async fn unfinished(database_url: &str) -> anyhow::Result<(usize, usize)> {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Counts {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        stranded: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        failed: i64,
    }
    let mut conn = diesel_async::AsyncPgConnection::establish(database_url).await?;
    let counts: Counts = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE failure_reason IS NULL) AS stranded, \
                count(*) FILTER (WHERE failure_reason IS NOT NULL) AS failed \
           FROM messaging_event_receipts WHERE handled_at IS NULL",
    )
    .get_result(&mut conn)
    .await?;
    Ok((counts.stranded as usize, counts.failed as usize))
}

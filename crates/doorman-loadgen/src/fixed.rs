//! The edge alone: one fixed, pre-signed request sent in a closed loop for a few seconds, the
//! way `wrk` would. Two paths are measured: `url_verification` (verify and parse, no
//! database) and an event from a workspace no tenant has linked (verify, parse, resolve).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use doorman_testkit::slack::sign;
use hdrhistogram::Histogram;

use crate::setup::SIGNING_SECRET;

#[derive(Debug)]
pub struct FixedResult {
    pub requests: u64,
    pub elapsed: Duration,
    pub statuses: BTreeMap<u16, u64>,
    /// Microseconds.
    pub latency: Histogram<u64>,
}

impl FixedResult {
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

/// The two requests, as bodies for `/slack/events`.
pub fn url_verification() -> Vec<u8> {
    br#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#.to_vec()
}

pub fn unlinked_event() -> Vec<u8> {
    serde_json::json!({
        "token": "XXYYZZ", "team_id": "TUNLINKED", "api_app_id": "A0MDYCDME",
        "event": {"type": "app_mention", "user": "U061F7AUR", "text": "hello", "ts": "1515449522.000016",
                  "channel": "C0LAN2Q65", "event_ts": "1515449522.000016"},
        "type": "event_callback", "event_id": "EvUnlinked", "event_time": 1515449522,
        "authorizations": [{"enterprise_id": null, "team_id": "TUNLINKED", "user_id": "U0LAN0Z89",
                            "is_bot": true, "is_enterprise_install": false}]
    })
    .to_string()
    .into_bytes()
}

/// Sends `body` to `/slack/events` from `concurrency` clients for `duration`.
pub async fn run(
    base: &str,
    concurrency: usize,
    body: Vec<u8>,
    duration: Duration,
) -> anyhow::Result<FixedResult> {
    let client = reqwest::Client::builder().pool_max_idle_per_host(concurrency).build()?;
    // One signature for the whole run: well inside the 300 s window.
    let timestamp = chrono::Utc::now().timestamp();
    let signature = sign(SIGNING_SECRET, timestamp, &body);
    let body = bytes::Bytes::from(body);
    let latency = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?));
    let statuses = Arc::new(Mutex::new(BTreeMap::new()));
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, body, signature, latency, statuses) =
                (client.clone(), body.clone(), signature.clone(), latency.clone(), statuses.clone());
            let url = format!("{base}/slack/events");
            tokio::spawn(async move {
                let mut mine = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
                let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let status = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("x-slack-request-timestamp", timestamp.to_string())
                        .header("x-slack-signature", &signature)
                        .body(body.clone())
                        .send()
                        .await
                        .map(|r| r.status().as_u16())
                        .unwrap_or(0);
                    let _ = mine.record(u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX).max(1));
                    *counts.entry(status).or_default() += 1;
                }
                latency.lock().unwrap().add(&mine).expect("same bounds");
                let mut all = statuses.lock().unwrap();
                for (status, n) in counts {
                    *all.entry(status).or_default() += n;
                }
            })
        })
        .collect();
    futures_util::future::join_all(workers).await;
    let elapsed = started.elapsed();
    let statuses = statuses.lock().unwrap().clone();
    let latency = latency.lock().unwrap().clone();
    Ok(FixedResult { requests: statuses.values().sum(), elapsed, statuses, latency })
}

//! The busy shape: a load that keeps Doorman busy, the way a new user would first try it
//! (`wrk -c64` with a script of unique events).
//!
//! `connections` clients each send the next pre-signed unique `app_mention` (one tenant by
//! default) as soon as the previous answer arrives, for a fixed window; the fake agent answers
//! at once; the server's in-flight bounds are raised (1,024 per tenant, 4,096 in all) so that
//! only Doorman's own speed limits what it takes. Only 2xx answers count as acknowledgements:
//! a 503 "busy" is back-pressure, and a binary that finishes events more slowly than it takes
//! them fills its bound and answers 503 from then on. The mixed shape ([`crate::load`]) never
//! gets there: its senders wait for each event's re-deliveries.
//!
//! With `overload`, the agent holds every dispatch until the window ends (a slow agent): the
//! bound fills within the first milliseconds and every answer after that is a 503 "busy". That
//! measures what refusing costs (answers per second, CPU and log lines per answer).
//!
//! The clients speak HTTP/1.1 themselves over one kept-alive connection each, as `wrk` does:
//! a general-purpose client costs several times the CPU of the request itself, and on a
//! 2-core machine whatever the load generator spends, Doorman cannot.
//!
//! After the window the run waits until every acknowledged event reached the agent, then
//! reads the CPU every party spent (server, PostgreSQL, agent, load generator), and checks
//! nothing acknowledged was lost or doubled and no receipt was left unhandled.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use doorman_testkit::slack::sign;
use hdrhistogram::Histogram;

use crate::cpu;
use crate::load::{event_body, unfinished};
use crate::setup::{Run, SIGNING_SECRET};

/// The server's bounds in this shape: high enough that only a server slower than its load
/// reaches them.
pub const SERVER_ENV: [(&str, &str); 2] =
    [("DOORMAN_MAX_IN_FLIGHT_PER_TENANT", "1024"), ("DOORMAN_MAX_IN_FLIGHT", "4096")];

/// What one party spent over the run (until the last dispatch).
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    pub server: Option<Duration>,
    pub postgres: Option<Duration>,
    pub agent: Option<Duration>,
    pub loadgen: Option<Duration>,
}

#[derive(Debug)]
pub struct BusyResult {
    pub overload: bool,
    pub connections: usize,
    /// How long the clients sent.
    pub window: Duration,
    /// Answers by status; 0 counts requests that got no answer.
    pub statuses: BTreeMap<u16, u64>,
    /// 503 answers by their `reason`.
    pub unavailable: BTreeMap<String, u64>,
    /// Answer latency, microseconds.
    pub latency: Histogram<u64>,
    /// Unique events answered 2xx.
    pub acknowledged: usize,
    /// Unique events the agent received.
    pub handled: usize,
    pub lost: usize,
    pub doubled: usize,
    /// Receipts claimed, never handled, no failure, at the end.
    pub stranded: usize,
    pub spent: Spent,
    pub peak_rss_kib: Option<u64>,
    /// Lines the server logged over the run.
    pub log_lines: usize,
}

impl BusyResult {
    pub fn correct(&self) -> bool {
        self.lost == 0 && self.doubled == 0 && self.stranded == 0
    }

    pub fn answered(&self) -> u64 {
        self.statuses.values().sum()
    }

    pub fn ok(&self) -> u64 {
        self.statuses.iter().filter(|(code, _)| (200..300).contains(*code)).map(|(_, n)| n).sum()
    }

    pub fn ok_per_s(&self) -> f64 {
        self.ok() as f64 / self.window.as_secs_f64()
    }

    pub fn busy(&self) -> u64 {
        self.unavailable.get("busy").copied().unwrap_or(0)
    }

    pub fn busy_per_s(&self) -> f64 {
        self.busy() as f64 / self.window.as_secs_f64()
    }
}

/// The server's environment in the busy and overload shapes (and the backlog shape's, which
/// measures the busy load): [`SERVER_ENV`] at the default log level, as an operator runs it, so
/// what overload logs is counted.
pub fn server_env() -> Vec<(&'static str, &'static str)> {
    let mut env = SERVER_ENV.to_vec();
    env.push(("RUST_LOG", "info"));
    env
}

/// Pre-signed requests: body, timestamp, signature.
struct Signed {
    body: bytes::Bytes,
    timestamp: String,
    signature: String,
}

/// The unique events the connections send, signed before the clock starts (once: the window is
/// far inside Slack's 5 minutes), so signing is neither in the window nor in its CPU figures.
pub struct Events {
    /// Every event id starts with it: the agent's arrivals of other events are not counted.
    prefix: String,
    requests: Arc<Vec<Signed>>,
}

impl Events {
    /// `count` events of the run's first tenant.
    pub fn sign(run: &Run, count: usize) -> Self {
        let team = &run.tenants[0].1;
        let prefix = format!("Ev{}B", run.run_id);
        let timestamp = chrono::Utc::now().timestamp();
        let requests = (0..count)
            .map(|i| {
                let body = event_body(team, &format!("{prefix}{i:07}"), 600).into_bytes();
                let signature = sign(SIGNING_SECRET, timestamp, &body);
                Signed { body: body.into(), timestamp: timestamp.to_string(), signature }
            })
            .collect();
        Self { prefix, requests: Arc::new(requests) }
    }
}

/// Sends `events` over `connections` for `window` and counts what came of them (see the
/// module's documentation).
pub async fn run(
    run: &Run,
    events: &Events,
    connections: usize,
    window: Duration,
    overload: bool,
) -> anyhow::Result<BusyResult> {
    let (prefix, requests) = (&events.prefix, &events.requests);
    let server = run.server.as_ref().expect("server running");
    let address = server.base().trim_start_matches("http://").to_owned();
    if overload {
        run.agent.close_gate();
    }

    let logs_before = server.log_lines();
    let before = Sample::take(server.pid());
    let started = Instant::now();
    let deadline = started + window;
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..connections)
        .map(|_| {
            let (address, requests, next) = (address.clone(), requests.clone(), next.clone());
            tokio::spawn(
                async move { Client::default().send_until(&address, &requests, &next, deadline).await },
            )
        })
        .collect();
    let mut total = Client::default();
    for client in futures_util::future::join_all(clients).await {
        total.merge(client?);
    }
    let window = started.elapsed();
    if overload {
        run.agent.open_gate();
    }

    // Every acknowledged event should reach the agent; wait while dispatches still arrive.
    let acknowledged = total.acknowledged.len();
    let mut last = (run.agent.count(), Instant::now());
    while run.agent.count() < acknowledged && last.1.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if run.agent.count() != last.0 {
            last = (run.agent.count(), Instant::now());
        }
    }
    let after = Sample::take(server.pid());
    let log_lines = server.log_lines() - logs_before;

    let mut per_event: HashMap<String, usize> = HashMap::new();
    for received in run.agent.received() {
        if let Some(id) = received.external_event_id.filter(|id| id.starts_with(prefix.as_str())) {
            *per_event.entry(id).or_default() += 1;
        }
    }
    let lost =
        total.acknowledged.iter().filter(|i| !per_event.contains_key(&format!("{prefix}{i:07}"))).count();
    let doubled = per_event.values().filter(|n| **n > 1).count();
    let (mut stranded, _) = unfinished(&run.database_url).await?;
    for _ in 0..100 {
        if stranded == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        (stranded, _) = unfinished(&run.database_url).await?;
    }
    Ok(BusyResult {
        overload,
        connections,
        window,
        statuses: total.statuses,
        unavailable: total.unavailable,
        latency: total.latency,
        acknowledged,
        handled: per_event.len(),
        lost,
        doubled,
        stranded,
        spent: after.since(&before),
        peak_rss_kib: server.peak_rss_kib(),
        log_lines,
    })
}

/// CPU time used so far by every party.
struct Sample {
    server: Option<Duration>,
    postgres: Option<Duration>,
    own: Option<cpu::Own>,
}

impl Sample {
    fn take(server_pid: u32) -> Self {
        Self { server: cpu::process(server_pid), postgres: cpu::postgres(), own: cpu::Own::sample() }
    }

    fn since(&self, before: &Self) -> Spent {
        let diff = |a: Option<Duration>, b: Option<Duration>| a.zip(b).map(|(a, b)| a.saturating_sub(b));
        let own = self.own.zip(before.own).map(|(after, before)| after.since(before));
        Spent {
            server: diff(self.server, before.server),
            postgres: diff(self.postgres, before.postgres),
            agent: own.map(|o| o.agent),
            loadgen: own.map(|o| o.loadgen),
        }
    }
}

/// One connection's tally.
struct Client {
    statuses: BTreeMap<u16, u64>,
    unavailable: BTreeMap<String, u64>,
    latency: Histogram<u64>,
    /// Indexes of the events answered 2xx.
    acknowledged: Vec<usize>,
}

impl Default for Client {
    fn default() -> Self {
        Self {
            statuses: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds"),
            acknowledged: Vec::new(),
        }
    }
}

impl Client {
    /// Sends the next unsent request as soon as the previous one is answered, until the
    /// deadline or the last request.
    async fn send_until(
        mut self,
        address: &str,
        requests: &[Signed],
        next: &AtomicUsize,
        deadline: Instant,
    ) -> Self {
        let mut connection: Option<Connection> = None;
        let mut head = Vec::with_capacity(512);
        while Instant::now() < deadline {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(request) = requests.get(i) else { break };
            head.clear();
            write!(
                head,
                "POST /slack/events HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
                 x-slack-request-timestamp: {}\r\nx-slack-signature: {}\r\ncontent-length: {}\r\n\r\n",
                request.timestamp,
                request.signature,
                request.body.len()
            )
            .expect("writing to a Vec");
            let sent = Instant::now();
            if connection.is_none() {
                connection = Connection::open(address).await.ok();
            }
            let answer = match connection.as_mut() {
                Some(open) => open.exchange(&head, &request.body).await,
                None => Err(std::io::Error::other("cannot connect")),
            };
            let status = match answer {
                Ok(answer) => {
                    if !answer.keep_alive {
                        connection = None;
                    }
                    if answer.status == 503 {
                        let reason = serde_json::from_slice::<serde_json::Value>(&answer.body)
                            .ok()
                            .and_then(|body| {
                                // Earlier binaries say only `error`.
                                body.get("reason")
                                    .or_else(|| body.get("error"))
                                    .and_then(|r| r.as_str())
                                    .map(str::to_owned)
                            })
                            .unwrap_or_else(|| "unreadable".into());
                        *self.unavailable.entry(reason).or_default() += 1;
                    }
                    answer.status
                }
                Err(_) => {
                    connection = None;
                    0
                }
            };
            let _ = self.latency.record(u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX).max(1));
            *self.statuses.entry(status).or_default() += 1;
            if (200..300).contains(&status) {
                self.acknowledged.push(i);
            }
        }
        self
    }

    fn merge(&mut self, other: Self) {
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        for (reason, n) in other.unavailable {
            *self.unavailable.entry(reason).or_default() += n;
        }
        self.latency.add(&other.latency).expect("same bounds");
        self.acknowledged.extend(other.acknowledged);
    }
}

/// One kept-alive HTTP/1.1 connection: write a request, read its answer (status, body,
/// whether the server keeps the connection open). Enough for Doorman's answers: a
/// `content-length` body, no chunking.
struct Connection {
    stream: tokio::net::TcpStream,
    buffer: Vec<u8>,
}

struct Answer {
    status: u16,
    body: Vec<u8>,
    keep_alive: bool,
}

impl Connection {
    async fn open(address: &str) -> std::io::Result<Self> {
        let stream = tokio::net::TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, buffer: Vec::with_capacity(4096) })
    }

    async fn exchange(&mut self, head: &[u8], body: &[u8]) -> std::io::Result<Answer> {
        use tokio::io::AsyncWriteExt;
        let mut request = Vec::with_capacity(head.len() + body.len());
        request.extend_from_slice(head);
        request.extend_from_slice(body);
        self.stream.write_all(&request).await?;
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&self.buffer[..end])
                    .map_err(std::io::Error::other)?
                    .to_ascii_lowercase();
                let status = head
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| std::io::Error::other("no status"))?;
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let keep_alive = !head.lines().any(|l| l.starts_with("connection:") && l.contains("close"));
                let total = end + 4 + length;
                while self.buffer.len() < total {
                    self.read_more().await?;
                }
                let body = self.buffer[end + 4..total].to_vec();
                self.buffer.drain(..total);
                return Ok(Answer { status, body, keep_alive });
            }
            self.read_more().await?;
        }
    }

    async fn read_more(&mut self) -> std::io::Result<()> {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

//! `TestApp`: the server, its database and its agent, plus signed Slack requests.

use std::collections::{BTreeMap, HashSet};
use std::sync::Once;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::Parser;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::schema::messaging_event_receipts as receipts;
use doorman_app::cli::{Cli, Command};
use doorman_app::config::ServeConfig;
use doorman_app::slack::{self, RunningServer};
use doorman_domain::TenantId;
use doorman_testkit::database::{TEST_KEYS, TestDatabase, tenant_with_agent, with_address};
use doorman_testkit::fake_agent::Arrival;
use doorman_testkit::slack::sign;
use doorman_testkit::{FakeAgent, FaultProxy, ServeProcess};

pub const SIGNING_SECRET: &str = "e2e-slack-signing-secret";
pub const AGENT_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const WAIT: Duration = Duration::from_secs(10);

/// Logs of in-process servers go to stderr when TEST_LOG is set, so a failing test can be
/// re-run with its logs. Tests that check what was (not) logged run the binary instead
/// ([`TestApp::spawn_process`]), whose logs are its own.
pub fn init_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("TEST_LOG").is_none() {
            return;
        }
        let filter = tracing_subscriber::EnvFilter::new(
            "info,doorman_app=debug,doorman_domain=debug,doorman_adapters=debug",
        );
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    });
}

/// `doorman serve` as the tests run it: in production's least-privileged login (the URL
/// given), with the test keys, and the fake agents' http://127.0.0.1 allowed.
pub fn serve_config(database_url: &str, extra: &[&str]) -> ServeConfig {
    let mut argv = vec![
        "doorman",
        "serve",
        "--database-url",
        database_url,
        "--slack-signing-secret",
        SIGNING_SECRET,
        "--encryption-keys",
        TEST_KEYS,
        "--agent-allow-private",
        "true",
        "--workers",
        "2",
    ];
    if !extra.contains(&"--bind") {
        argv.extend_from_slice(&["--bind", "127.0.0.1:0"]);
    }
    if !extra.contains(&"--metrics-bind") {
        argv.extend_from_slice(&["--metrics-bind", "127.0.0.1:0"]);
    }
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).expect("valid test arguments").command {
        Command::Serve(args) => ServeConfig::from_args(&args).expect("valid test config"),
        _ => unreachable!(),
    }
}

/// Where the server under test runs.
pub enum Server {
    /// `slack::start` in this test's runtime: fast, and proxies can sit in front of things.
    /// Held only so the server lives as long as the test.
    InProcess(#[allow(dead_code)] Box<RunningServer>),
    /// The `doorman` binary: its own process, its own logs.
    Process(ServeProcess),
}

pub struct TestApp {
    pub db: TestDatabase,
    pub agent: FakeAgent,
    /// Between the server and PostgreSQL, when asked for.
    pub db_proxy: Option<FaultProxy>,
    /// Between the server and the agent, when asked for; tenants' agent URLs point at it.
    pub agent_proxy: Option<FaultProxy>,
    pub server: Server,
    pub base: String,
    /// Where its `/metrics` answers (a listener of its own).
    pub metrics_base: String,
    pub http: reqwest::Client,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(&[]).await
    }

    /// With extra `doorman serve` flags.
    pub async fn spawn_with(extra: &[&str]) -> Self {
        Self::spawn_full(extra, false, false).await
    }

    /// With fault-injecting proxies in front of the database and/or the agent.
    pub async fn spawn_full(extra: &[&str], proxy_database: bool, proxy_agent: bool) -> Self {
        init_logs();
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let db_proxy = if proxy_database { Some(FaultProxy::start(db.server_addr()).await) } else { None };
        let agent_proxy = if proxy_agent {
            let agent_addr =
                agent.url().trim_start_matches("http://").trim_end_matches("/dispatch").parse().unwrap();
            Some(FaultProxy::start(agent_addr).await)
        } else {
            None
        };
        let server_url = match &db_proxy {
            Some(proxy) => with_address(&db.server_url(), proxy.addr()),
            None => db.server_url(),
        };
        let server = slack::start(serve_config(&server_url, extra)).await.expect("server starts");
        let base = format!("http://{}", server.addr());
        let metrics_base = format!("http://{}", server.metrics_addr());
        let server = Server::InProcess(Box::new(server));
        Self { db, agent, db_proxy, agent_proxy, server, base, metrics_base, http: http_client() }
    }

    /// The `doorman` binary, logging at debug level into a buffer of its own.
    pub async fn spawn_process(extra: &[&str]) -> Self {
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let process = spawn_serve(&db, "debug", &[&["--workers", "2"], extra].concat());
        let base = process.base().to_owned();
        let metrics_base = process.metrics_base().to_owned();
        let server = Server::Process(process);
        Self { db, agent, db_proxy: None, agent_proxy: None, server, base, metrics_base, http: http_client() }
    }

    /// Everything the server process has logged (only for [`TestApp::spawn_process`]).
    pub fn logs(&self) -> String {
        match &self.server {
            Server::Process(process) => process.logs(),
            Server::InProcess(_) => panic!("logs are kept only for a server process"),
        }
    }

    /// Waits until every dispatch the server has started has finished and written its
    /// receipt. Dispatches are counted before the answer, so once a test has its answers
    /// this is when everything they caused is over: nothing more can reach the agent.
    pub async fn quiesce(&self) {
        quiesce(&self.http, &self.metrics_base).await;
    }

    /// Dispatches started and not finished, as `/metrics` says.
    pub async fn dispatches_in_flight(&self) -> u64 {
        dispatches_in_flight(&self.http, &self.metrics_base).await
    }

    /// The agent URL tenants are given: through the agent proxy when there is one.
    pub fn agent_url(&self) -> String {
        match &self.agent_proxy {
            Some(proxy) => format!("http://{}/dispatch", proxy.addr()),
            None => self.agent.url().to_owned(),
        }
    }

    /// A tenant with `team` linked and the fake agent set.
    pub async fn tenant(&self, team: &str) -> TenantId {
        tenant_with_agent(&self.db.operator(), team, &self.agent_url(), AGENT_SECRET).await
    }

    pub async fn post(
        &self,
        route: &str,
        content_type: &str,
        body: &[u8],
        attempt: Option<u32>,
    ) -> reqwest::Response {
        let timestamp = Utc::now().timestamp();
        self.post_signed(
            route,
            content_type,
            body,
            attempt,
            timestamp,
            &sign(SIGNING_SECRET, timestamp, body),
        )
        .await
    }

    pub async fn post_signed(
        &self,
        route: &str,
        content_type: &str,
        body: &[u8],
        attempt: Option<u32>,
        timestamp: i64,
        signature: &str,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{route}", self.base))
            .header("content-type", content_type)
            .header("x-slack-request-timestamp", timestamp.to_string())
            .header("x-slack-signature", signature)
            .body(body.to_vec());
        if let Some(attempt) = attempt {
            request = request
                .header("x-slack-retry-num", attempt.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        request.send().await.expect("request sent")
    }

    /// Delivers an Events API callback; `attempt` adds Slack's retry headers.
    pub async fn event(&self, team: &str, event_id: &str, attempt: Option<u32>) -> reqwest::Response {
        self.post("/slack/events", "application/json", event_body(team, event_id).as_bytes(), attempt).await
    }

    /// A slash command; each carries a fresh `trigger_id`, as Slack's do, so no two are the
    /// same signed request.
    pub async fn command(&self, team: &str) -> reqwest::Response {
        self.post("/slack/commands", "application/x-www-form-urlencoded", command_body(team).as_bytes(), None)
            .await
    }

    pub async fn interaction(&self, team: &str) -> reqwest::Response {
        let trigger = uuid::Uuid::new_v4().simple().to_string();
        let payload = serde_json::json!({"type": "block_actions", "trigger_id": trigger, "team": {"id": team}, "user": {"id": "U1", "team_id": team}});
        let body = form_urlencoded_pair("payload", &payload.to_string());
        self.post("/slack/interactions", "application/x-www-form-urlencoded", body.as_bytes(), None).await
    }

    pub async fn receipts(&self) -> Vec<ReceiptRow> {
        receipts_of(&self.db).await
    }

    /// Re-sends an event as Slack does after a 503 (attempt 1, 2, …) until it is answered 200.
    pub async fn retry_until_taken(&self, team: &str, event_id: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        for attempt in 1.. {
            match self.event(team, event_id, Some(attempt)).await.status().as_u16() {
                200 => return,
                503 => {}
                other => panic!("{event_id}: unexpected {other}"),
            }
            assert!(tokio::time::Instant::now() < deadline, "{event_id} still refused after {WAIT:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends fresh events for `team` until one is answered `status`; how long that took. A
    /// change made in another process (the CLI) reaches this one by a notice, in milliseconds.
    pub async fn until_answered(&self, team: &str, status: u16) -> Duration {
        let started = tokio::time::Instant::now();
        for n in 0.. {
            if self.event(team, &format!("EvUntil{status}x{n}"), None).await.status() == status {
                return started.elapsed();
            }
            assert!(started.elapsed() < WAIT, "never answered {status}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        unreachable!()
    }

    /// Polls the receipts until `predicate` holds.
    pub async fn wait_for_receipts(
        &self,
        what: &str,
        predicate: impl Fn(&[ReceiptRow]) -> bool,
    ) -> Vec<ReceiptRow> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let rows = self.receipts().await;
            if predicate(&rows) {
                return rows;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for: {what}; receipts: {rows:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn metrics(&self) -> String {
        self.http.get(format!("{}/metrics", self.metrics_base)).send().await.unwrap().text().await.unwrap()
    }

    /// Directory change notices the server has applied (`doorman_directory_notices_total`).
    pub async fn directory_notices(&self) -> u64 {
        directory_notices(&self.http, &self.metrics_base).await
    }

    /// [`wait_for_directory_notice_since`] for this server.
    pub async fn wait_for_directory_notice_since(&self, before: u64) {
        wait_for_directory_notice_since(&self.http, &self.metrics_base, before).await;
    }
}

/// Directory change notices the server whose metrics answer at `metrics_base` has applied
/// (`doorman_directory_notices_total`), once its listener has subscribed (a change made
/// before that is announced to nobody, and the directory reads it from the database).
pub async fn directory_notices(http: &reqwest::Client, metrics_base: &str) -> u64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    while metric_value(http, metrics_base, "doorman_directory_listening").await != 1 {
        assert!(tokio::time::Instant::now() < deadline, "the directory listener never subscribed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    metric_value(http, metrics_base, "doorman_directory_notices_total").await
}

/// Waits until that server has applied a directory notice since `before`: what its directory
/// remembers from then on was read after the change that sent it, so the next delivery sees
/// the change. A change is heard within milliseconds, so the delivery right after one may
/// still see the old answer; how long it took is the machine's speed, not the feature's, and
/// is not asserted.
pub async fn wait_for_directory_notice_since(http: &reqwest::Client, metrics_base: &str, before: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while directory_notices(http, metrics_base).await <= before {
        assert!(tokio::time::Instant::now() < deadline, "no directory notice after {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every receipt in `db`, by tenant and event id (read as the owner).
pub async fn receipts_of(db: &TestDatabase) -> Vec<ReceiptRow> {
    receipts::table
        .select((
            receipts::tenant_id,
            receipts::external_event_id,
            receipts::handled_at,
            receipts::failure_reason,
            receipts::delivery_attempt,
        ))
        .order((receipts::tenant_id, receipts::external_event_id))
        .load::<(uuid::Uuid, String, Option<DateTime<Utc>>, Option<String>, i32)>(&mut db.owner().await)
        .await
        .unwrap()
        .into_iter()
        .map(|(tenant, event_id, handled_at, failure, attempt)| ReceiptRow {
            tenant,
            event_id,
            handled_at,
            failure,
            attempt,
        })
        .collect()
}

pub fn http_client() -> reqwest::Client {
    doorman_adapters::outbound::install_crypto_provider();
    reqwest::Client::new()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRow {
    pub tenant: uuid::Uuid,
    pub event_id: String,
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<String>,
    pub attempt: i32,
}

pub fn event_body(team: &str, event_id: &str) -> String {
    serde_json::json!({
        "token": "XXYYZZ",
        "team_id": team,
        "api_app_id": "A0MDYCDME",
        "event": {"type": "app_mention", "user": "U061F7AUR", "text": "<@U0LAN0Z89> hello", "ts": "1515449522.000016",
                  "channel": "C0LAN2Q65", "event_ts": "1515449522.000016"},
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1515449522,
        "authorizations": [{"enterprise_id": null, "team_id": team, "user_id": "U0LAN0Z89", "is_bot": true, "is_enterprise_install": false}]
    })
    .to_string()
}

pub fn command_body(team: &str) -> String {
    format!(
        "team_id={team}&command=%2Fweather&text=paris&user_id=U1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx&trigger_id={}",
        uuid::Uuid::new_v4().simple()
    )
}

pub fn form_urlencoded_pair(name: &str, value: &str) -> String {
    let mut out = format!("{name}=");
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(byte as char),
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// The `doorman serve` binary on `db`, logging in as the least-privileged server role, with
/// the test keys and private agents allowed; its logs at `rust_log`, kept per process.
pub fn spawn_serve(db: &TestDatabase, rust_log: &str, args: &[&str]) -> ServeProcess {
    spawn_serve_on(&db.server_url(), rust_log, args)
}

/// The same on any database URL (a cluster's, a pooler's).
pub fn spawn_serve_on(url: &str, rust_log: &str, args: &[&str]) -> ServeProcess {
    let env = [
        ("DATABASE_URL", url),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS),
        ("DOORMAN_AGENT_ALLOW_PRIVATE", "true"),
        ("RUST_LOG", rust_log),
    ];
    ServeProcess::spawn(env!("CARGO_BIN_EXE_doorman").as_ref(), &env, args).expect("doorman serve starts")
}

/// Waits until the server whose metrics answer at `base` has no dispatch in flight (see [`TestApp::quiesce`]).
pub async fn quiesce(http: &reqwest::Client, base: &str) {
    assert!(quiesce_within(http, base, WAIT).await, "dispatches still in flight after {WAIT:?}");
}

/// The same, waiting at most `wait`: whether the server got there.
pub async fn quiesce_within(http: &reqwest::Client, base: &str, wait: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    while dispatches_in_flight(http, base).await > 0 {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

pub async fn dispatches_in_flight(http: &reqwest::Client, base: &str) -> u64 {
    metric_value(http, base, "doorman_dispatches_in_flight").await
}

/// The value of `name`'s unlabelled sample in the `/metrics` answered at `base` (a
/// process's metrics listener).
pub async fn metric_value(http: &reqwest::Client, base: &str, name: &str) -> u64 {
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let sample = format!("{name} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(sample.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} sample in /metrics"))
}

/// Sends raw bytes over TCP and returns what came back within `timeout` (for requests no
/// HTTP client would send: control characters in headers, bodies that never finish).
pub async fn raw_request(base: &str, request: &[u8], timeout: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buffer[..n]);
                if answer.windows(4).any(|w| w == b"\r\n\r\n") && !answer.starts_with(b"HTTP/1.1 100") {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Slack's signature headers for `body`, signed now.
pub fn signature_headers(body: &[u8]) -> String {
    let timestamp = Utc::now().timestamp();
    format!(
        "X-Slack-Request-Timestamp: {timestamp}\r\nX-Slack-Signature: {}\r\n",
        sign(SIGNING_SECRET, timestamp, body)
    )
}

/// Posts a signed Events API delivery for `team` to a server at `base`; returns the status.
pub async fn post_event(http: &reqwest::Client, base: &str, team: &str, event_id: &str) -> u16 {
    post_event_attempt(http, base, team, event_id, 0).await
}

/// The same; `None` when nothing answered (a server that is down).
pub async fn try_post_event(http: &reqwest::Client, base: &str, team: &str, event_id: &str) -> Option<u16> {
    try_post_signed(
        http,
        &format!("{base}/slack/events"),
        "application/json",
        event_body(team, event_id),
        &[],
    )
    .await
    .ok()
}

/// The same as Slack's `attempt`th re-send of it (`X-Slack-Retry-Num`, outside the signature;
/// 0: the first delivery, without the header).
pub async fn post_event_attempt(
    http: &reqwest::Client,
    base: &str,
    team: &str,
    event_id: &str,
    attempt: u32,
) -> u16 {
    let retry = (attempt > 0).then(|| attempt.to_string());
    let retry = retry.as_deref().map(|n| [("x-slack-retry-num", n), ("x-slack-retry-reason", "http_error")]);
    post_signed(
        http,
        &format!("{base}/slack/events"),
        "application/json",
        event_body(team, event_id),
        retry.as_ref().map_or(&[][..], |headers| &headers[..]),
    )
    .await
}

/// Posts a signed slash command of `team` (a fresh `trigger_id`: its own fingerprint) to a
/// server at `base`; returns the status.
pub async fn post_command(http: &reqwest::Client, base: &str, team: &str) -> u16 {
    post_signed(
        http,
        &format!("{base}/slack/commands"),
        "application/x-www-form-urlencoded",
        command_body(team),
        &[],
    )
    .await
}

/// Posts `body`, signed as Slack signs it now, with `unsigned` headers besides (Slack's retry
/// headers are outside the signature), to `url`; returns the status.
async fn post_signed(
    http: &reqwest::Client,
    url: &str,
    content_type: &str,
    body: String,
    unsigned: &[(&str, &str)],
) -> u16 {
    try_post_signed(http, url, content_type, body, unsigned).await.expect("request sent")
}

/// The same; an error when nothing answered (a server that is down).
async fn try_post_signed(
    http: &reqwest::Client,
    url: &str,
    content_type: &str,
    body: String,
    unsigned: &[(&str, &str)],
) -> Result<u16, reqwest::Error> {
    let now = Utc::now().timestamp();
    let mut request = http
        .post(url)
        .header("content-type", content_type)
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", sign(SIGNING_SECRET, now, body.as_bytes()));
    for (name, value) in unsigned {
        request = request.header(*name, *value);
    }
    request.body(body).send().await.map(|answer| answer.status().as_u16())
}

/// Delivers an event as Slack does: re-sent after each 503 (a 503 is not an acknowledgement)
/// until it is answered 200; how many deliveries that took. Any other status fails the test.
pub async fn deliver_as_slack(http: &reqwest::Client, base: &str, team: &str, event_id: &str) -> u32 {
    let deadline = tokio::time::Instant::now() + WAIT;
    for attempt in 0.. {
        match post_event_attempt(http, base, team, event_id, attempt).await {
            200 => return attempt + 1,
            503 => {}
            other => panic!("{event_id}: answered {other}"),
        }
        assert!(tokio::time::Instant::now() < deadline, "{event_id} still refused after {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unreachable!()
}

/// The `doorman` binary, as an operator runs it against `database_url`.
pub fn doorman(database_url: &str, args: &[&str]) -> std::process::Output {
    doorman_with(database_url, &[], args)
}

/// With more environment (the Slack app's settings, say) on top of the test keys and private
/// agents allowed.
pub fn doorman_with(database_url: &str, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut all = vec![("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS), ("DOORMAN_AGENT_ALLOW_PRIVATE", "true")];
    all.extend_from_slice(env);
    doorman_bare(database_url, &all, args)
}

/// With nothing configured but the database and `env`: none of Doorman's settings is
/// inherited from the shell (no keys, no private agents, no Slack app).
pub fn doorman_bare(database_url: &str, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_doorman"))
        .args(args)
        .env_remove("SLACK_CLIENT_ID")
        .env_remove("SLACK_CLIENT_SECRET")
        .env_remove("DOORMAN_PUBLIC_URL")
        .env_remove("DOORMAN_ENCRYPTION_KEYS")
        .env_remove("DOORMAN_AGENT_ALLOW_PRIVATE")
        .env_remove("DOORMAN_AGENT_SECRET")
        .env_remove("DOORMAN_CONSOLE_URL")
        .env_remove("DOORMAN_TRUSTED_PROXIES")
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        // Tests run side by side: each process's metrics on a port of its own.
        .env("DOORMAN_METRICS_BIND", "127.0.0.1:0")
        .env("DOORMAN_ADMIN_METRICS_BIND", "127.0.0.1:0")
        .envs(env.iter().copied())
        .output()
        .expect("run doorman")
}

/// Its stdout, once it succeeded.
pub fn ok(output: &std::process::Output) -> String {
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Every signed POST an agent read, whatever it answered, counted by `webhook-id` against the
/// events a load saw answered 200 (a numbered event's id is `evt_` and the event's).
pub struct PostsById {
    pub posts: usize,
    pub ids: usize,
    pub acknowledged: usize,
    /// Each id POSTed more than once, with every POST of it.
    pub twice: Vec<(String, Vec<Arrival>)>,
    /// Ids POSTed for events no sender saw answered 200.
    pub unacknowledged: Vec<String>,
}

impl PostsById {
    pub fn of<'a>(agent: &FakeAgent, acknowledged: impl IntoIterator<Item = &'a str>) -> Self {
        let arrivals = agent.arrivals();
        let acknowledged: HashSet<String> = acknowledged.into_iter().map(|id| format!("evt_{id}")).collect();
        let mut by_id: BTreeMap<String, Vec<Arrival>> = BTreeMap::new();
        for arrival in &arrivals {
            by_id.entry(arrival.webhook_id.clone()).or_default().push(arrival.clone());
        }
        let unacknowledged = by_id.keys().filter(|id| !acknowledged.contains(*id)).cloned().collect();
        Self {
            posts: arrivals.len(),
            ids: by_id.len(),
            acknowledged: acknowledged.len(),
            twice: by_id.into_iter().filter(|(_, posts)| posts.len() > 1).collect(),
            unacknowledged,
        }
    }

    /// POSTs = distinct ids = events acknowledged: no event POSTed twice (even one an agent
    /// could drop by its id), none POSTed that Slack would still be re-sending. `attempts`
    /// says what the load sent for an event id (its deliveries and their answers).
    pub fn assert_one_per_event(&self, attempts: impl Fn(&str) -> String) {
        let twice: Vec<String> = self
            .twice
            .iter()
            .map(|(id, posts)| {
                let posts: Vec<_> = posts.iter().map(|p| (&p.webhook_timestamp, p.peer, p.seq)).collect();
                let event = id.strip_prefix("evt_").unwrap_or(id);
                format!("{id}: POSTs (webhook-timestamp, peer, seq) {posts:?}; sent {}", attempts(event))
            })
            .collect();
        assert!(twice.is_empty(), "no webhook-id was POSTed twice:\n{}", twice.join("\n"));
        assert!(
            self.unacknowledged.is_empty(),
            "nothing was POSTed for an event no sender saw answered 200: {:?}",
            self.unacknowledged
        );
        assert_eq!(
            (self.posts, self.ids),
            (self.acknowledged, self.acknowledged),
            "POSTs = distinct webhook-ids = events acknowledged"
        );
    }
}

impl std::fmt::Display for PostsById {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the agent read {} signed POSTs with {} distinct webhook-ids for {} acknowledged events \
             ({} ids POSTed twice, {} not acknowledged)",
            self.posts,
            self.ids,
            self.acknowledged,
            self.twice.len(),
            self.unacknowledged.len()
        )
    }
}

//! `TestApp`: the server, its database and its agent, plus signed Slack requests.

use std::sync::Once;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::Parser;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::bridge::fake_agent::FakeAgent;
use doorman_adapters::postgres::admin;
use doorman_adapters::postgres::schema::messaging_event_receipts as receipts;
use doorman_adapters::postgres::testing::TestDatabase;
use doorman_adapters::slack::sign;
use doorman_app::cli::{Cli, Command};
use doorman_app::config::ServeConfig;
use doorman_app::server::{self, RunningServer};
use doorman_domain::{Platform, TenantId, WorkspaceId};

pub const SIGNING_SECRET: &str = "e2e-slack-signing-secret";
pub const AGENT_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
pub const WAIT: Duration = Duration::from_secs(10);

/// Logs only when TEST_LOG is set, so a failing test can be re-run with them.
pub fn init_logs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("TEST_LOG").is_some() {
            doorman_app::telemetry::init(doorman_app::cli::LogFormat::Pretty);
        }
    });
}

pub fn serve_config(database_url: &str, extra: &[&str]) -> ServeConfig {
    let mut argv = vec![
        "doorman",
        "serve",
        "--database-url",
        database_url,
        "--slack-signing-secret",
        SIGNING_SECRET,
        "--bind",
        "127.0.0.1:0",
        "--workers",
        "2",
    ];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).expect("valid test arguments").command {
        Command::Serve(args) => ServeConfig::from_args(&args).expect("valid test config"),
        _ => unreachable!(),
    }
}

pub struct TestApp {
    pub db: TestDatabase,
    pub agent: FakeAgent,
    /// Held so the server lives as long as the test.
    #[allow(dead_code)]
    pub server: Option<RunningServer>,
    pub base: String,
    pub http: reqwest::Client,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(&[]).await
    }

    /// With extra `doorman serve` flags.
    pub async fn spawn_with(extra: &[&str]) -> Self {
        init_logs();
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let server = server::start(serve_config(db.url(), extra)).await.expect("server starts");
        let base = format!("http://{}", server.addr());
        Self { db, agent, server: Some(server), base, http: http_client() }
    }

    /// A tenant with `team` linked and the fake agent set.
    pub async fn tenant(&self, team: &str) -> TenantId {
        let mut owner = self.db.owner().await;
        let tenant = admin::create_tenant(&mut owner, team).await.unwrap();
        let team = WorkspaceId::new(team).unwrap();
        admin::link_workspace(&mut owner, tenant, Platform::Slack, Some(&team), None).await.unwrap();
        admin::set_agent(&mut owner, tenant, self.agent.url(), AGENT_SECRET).await.unwrap();
        tenant
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

    pub async fn command(&self, team: &str) -> reqwest::Response {
        let body = format!(
            "team_id={team}&command=%2Fweather&text=paris&user_id=U1&response_url=https%3A%2F%2Fhooks.slack.com%2Fx"
        );
        self.post("/slack/commands", "application/x-www-form-urlencoded", body.as_bytes(), None).await
    }

    pub async fn interaction(&self, team: &str) -> reqwest::Response {
        let payload = serde_json::json!({"type": "block_actions", "team": {"id": team}, "user": {"id": "U1", "team_id": team}});
        let body = form_urlencoded_pair("payload", &payload.to_string());
        self.post("/slack/interactions", "application/x-www-form-urlencoded", body.as_bytes(), None).await
    }

    pub async fn receipts(&self) -> Vec<ReceiptRow> {
        receipts::table
            .select((
                receipts::tenant_id,
                receipts::external_event_id,
                receipts::handled_at,
                receipts::failure_reason,
            ))
            .order((receipts::tenant_id, receipts::external_event_id))
            .load::<(uuid::Uuid, String, Option<DateTime<Utc>>, Option<String>)>(&mut self.db.owner().await)
            .await
            .unwrap()
            .into_iter()
            .map(|(tenant, event_id, handled_at, failure)| ReceiptRow {
                tenant,
                event_id,
                handled_at,
                failure,
            })
            .collect()
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
        self.http.get(format!("{}/metrics", self.base)).send().await.unwrap().text().await.unwrap()
    }
}

pub fn http_client() -> reqwest::Client {
    doorman_adapters::bridge::install_crypto_provider();
    reqwest::Client::new()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptRow {
    pub tenant: uuid::Uuid,
    pub event_id: String,
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<String>,
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

/// Waits a little for something that must *not* happen (a second dispatch), after the
/// thing that must has already been observed.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

//! The admin API end to end: `doorman admin serve` on a random port, logged in as a member of
//! `doorman_admin` only, a fresh database, keys made by the command line, and a real
//! `doorman serve` beside it for the onboarding that ends in a dispatched event.

use std::time::Duration;

use doorman_app::cli::{AdminCommand, Cli, Command};
use doorman_app::config::AdminConfig;
use doorman_app::operator::{self, RunningAdmin};
use doorman_domain::{KeyName, KeyScope, TenantId};
use doorman_testkit::FakeAgent;
use doorman_testkit::database::{TEST_KEYS, TestDatabase};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{
    AGENT_SECRET, WAIT, directory_notices, doorman, http_client, ok, post_event, serve_config,
    wait_for_directory_notice_since,
};

mod audit;
mod declared;
mod keys;
mod offboarding;
mod overview;
mod payloads;
mod reads;
mod replays;
mod search;
mod totals;

/// `doorman admin serve` in this test's runtime.
pub(crate) struct Admin {
    pub(crate) base: String,
    /// Where its `/metrics` answers.
    metrics_base: String,
    pub(crate) http: reqwest::Client,
    _server: RunningAdmin,
}

/// An answer: status, `Content-Type`, `WWW-Authenticate`, `X-Request-Id` and the body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) content_type: String,
    pub(crate) www_authenticate: Option<String>,
    pub(crate) request_id: Option<String>,
    pub(crate) body: Value,
}

impl Admin {
    /// With the Slack app's settings (installs on), and `extra`.
    pub(crate) async fn start(db: &TestDatabase, extra: &[&str]) -> Self {
        let slack_app = [
            "--slack-client-id",
            "111.222",
            "--slack-client-secret",
            "admin-test-client-secret",
            "--public-url",
            "https://doorman.example",
        ];
        Self::launch(db, &[&slack_app, extra].concat()).await
    }

    /// With `flags` alone (on a free port unless they give `--bind`).
    pub(crate) async fn launch(db: &TestDatabase, flags: &[&str]) -> Self {
        crate::helpers::init_logs();
        let url = db.admin_url();
        let mut argv = vec![
            "doorman",
            "admin",
            "serve",
            "--database-url",
            &url,
            "--metrics-bind",
            "127.0.0.1:0",
            "--encryption-keys",
            TEST_KEYS,
            "--workers",
            "2",
        ];
        if !flags.contains(&"--bind") {
            argv.extend(["--bind", "127.0.0.1:0"]);
        }
        argv.extend_from_slice(flags);
        let Command::Admin(AdminCommand::Serve(args)) =
            clap::Parser::try_parse_from(argv).map(|c: Cli| c.command).unwrap()
        else {
            unreachable!()
        };
        let server = operator::start(AdminConfig::from_args(&args).unwrap()).await.expect("admin API starts");
        Self {
            base: format!("http://{}", server.addr()),
            metrics_base: format!("http://{}", server.metrics_addr()),
            http: http_client(),
            _server: server,
        }
    }

    /// With private agents allowed (the fake agent is on loopback over http).
    pub(crate) async fn start_allowing_private(db: &TestDatabase) -> Self {
        Self::start(db, &["--agent-allow-private", "true"]).await
    }

    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    pub(crate) async fn get(&self, path: &str, key: &str) -> Answer {
        self.call(Method::GET, path, Some(key), None).await
    }

    pub(crate) async fn post(&self, path: &str, key: &str, body: Value) -> Answer {
        self.call(Method::POST, path, Some(key), Some(body)).await
    }

    pub(crate) async fn put(&self, path: &str, key: &str, body: Value) -> Answer {
        self.call(Method::PUT, path, Some(key), Some(body)).await
    }

    /// Starts a replay (`POST path`: 202, a job and its `Location`), then reads the job until
    /// it has finished; the finished job.
    async fn replayed(&self, path: &str, key: &str, body: Value) -> Value {
        let started = self.post(path, key, body).await;
        assert_eq!(started.status, 202, "{started:?}");
        assert_eq!(started.body["state"], "queued", "{started:?}");
        let job = format!(
            "/admin/v1/tenants/{}/replays/{}",
            started.body["tenant_id"].as_str().unwrap(),
            started.body["id"].as_str().unwrap()
        );
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let read = self.get(&job, key).await;
            assert_eq!(read.status, 200, "{read:?}");
            if read.body["state"] == "finished" {
                return read.body;
            }
            assert!(tokio::time::Instant::now() < deadline, "the job never finished: {read:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Creates a tenant over the API; its id.
    pub(crate) async fn tenant(&self, key: &str, name: &str) -> String {
        let created = self.post("/admin/v1/tenants", key, json!({ "name": name })).await;
        assert_eq!(created.status, 201, "{created:?}");
        created.body["id"].as_str().unwrap().to_owned()
    }
}

async fn answer(response: reqwest::Response) -> Answer {
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let (status, content_type) = (response.status(), header("content-type").unwrap_or_default());
    let (www_authenticate, request_id) = (header("www-authenticate"), header("x-request-id"));
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Answer { status, content_type, www_authenticate, request_id, body }
}

/// A key made as `doorman admin keys create` makes one.
pub(crate) async fn key(db: &TestDatabase, tenant: Option<&str>, read_only: bool) -> String {
    let op = db.operator();
    let scope =
        KeyScope { tenant: tenant.map(|t| t.parse::<TenantId>().unwrap()), read_only, read_payloads: false };
    let (_, secret) =
        op.use_cases().create_key(op.caller(), KeyName::new("test key").unwrap(), scope, None).await.unwrap();
    secret.expose().to_owned()
}

/// Asserts a problem (RFC 9457) with this status, and for a 422 the field it names.
fn problem(answer: &Answer, status: u16, field: Option<&str>) {
    assert_eq!(answer.status.as_u16(), status, "{answer:?}");
    assert_eq!(answer.content_type, "application/problem+json", "{answer:?}");
    for member in ["type", "title", "detail"] {
        assert!(answer.body[member].is_string(), "{member} in {answer:?}");
    }
    assert_eq!(answer.body["status"], status, "{answer:?}");
    if let Some(field) = field {
        assert_eq!(answer.body["field"], field, "{answer:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_is_onboarded_over_http_only_and_its_first_event_reads_handled() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;

    let tenant = admin.tenant(&root, "Acme").await;
    let linked = admin
        .post(&format!("/admin/v1/tenants/{tenant}/workspaces"), &root, json!({"team_id": "TONBOARD"}))
        .await;
    assert_eq!(linked.status, 201, "{linked:?}");
    assert_eq!(linked.body["team_id"], "TONBOARD");
    let set = admin
        .put(
            &format!("/admin/v1/tenants/{tenant}/agent"),
            &root,
            json!({"url": agent.url(), "signing_secret": AGENT_SECRET}),
        )
        .await;
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(
        set.body,
        json!({"url": agent.url(), "paused": false, "signing_secret_set": true, "failing_since": null, "disabled_at": null})
    );
    assert!(!set.body.to_string().contains("whsec_"), "the secret is never returned");

    // The Slack-facing process, as doorman_app, delivers to the agent the API set.
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let base = format!("http://{}", server.addr());
    assert_eq!(post_event(&http_client(), &base, "TONBOARD", "EvOnboard1").await, 200);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let event = admin.get(&format!("/admin/v1/tenants/{tenant}/events/EvOnboard1"), &root).await;
        if event.status == 200 && event.body["status"] == "handled" {
            assert_eq!(event.body["dispatches"], 1);
            assert_eq!(event.body["tenant_id"], tenant.as_str());
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never handled: {event:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(agent.count_for("EvOnboard1"), 1);

    // A pause over the API is heard by the serving process, which answers 503 from then on.
    let metrics = format!("http://{}", server.metrics_addr());
    let notices = directory_notices(&http_client(), &metrics).await;
    let paused = admin.post(&format!("/admin/v1/tenants/{tenant}/agent/pause"), &root, json!({})).await;
    assert_eq!((paused.status.as_u16(), paused.body["paused"].clone()), (200, json!(true)));
    wait_for_directory_notice_since(&http_client(), &metrics, notices).await;
    assert_eq!(post_event(&http_client(), &base, "TONBOARD", "EvPaused").await, 503);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_is_a_problem_with_the_right_status() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await; // agents must be https on public addresses
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let other = admin.tenant(&root, "Other").await;
    let t = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");

    // 400: malformed JSON, and a body of the wrong shape.
    let raw = admin
        .http
        .post(format!("{}/admin/v1/tenants", admin.base))
        .bearer_auth(&root)
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    problem(&answer(raw).await, 400, None);
    problem(&admin.post("/admin/v1/tenants", &root, json!({"nom": "x"})).await, 400, None);
    // An unknown field is refused and named, not ignored.
    let extra = admin.post("/admin/v1/tenants", &root, json!({"name": "x", "admin": true})).await;
    problem(&extra, 400, Some("admin"));
    // 405 for a known route asked with another method, with the methods it takes.
    for (method, path, allow) in [
        (Method::PATCH, "/admin/v1/tenants".to_owned(), "GET, POST"),
        (Method::TRACE, format!("/admin/v1/tenants/{tenant}"), "GET, PATCH, DELETE"),
        (Method::PUT, "/admin/v1/keys".to_owned(), "GET, POST"),
    ] {
        let refused = admin
            .http
            .request(method.clone(), format!("{}{path}", admin.base))
            .bearer_auth(&root)
            .send()
            .await
            .unwrap();
        assert_eq!(
            refused.headers().get("allow").map(|v| v.to_str().unwrap().to_owned()).as_deref(),
            Some(allow),
            "{method} {path}"
        );
        problem(&answer(refused).await, 405, None);
    }
    // 415: not JSON.
    let form = admin.http.post(format!("{}/admin/v1/tenants", admin.base)).bearer_auth(&root).body("name=x");
    problem(&answer(form.send().await.unwrap()).await, 415, None);
    // 413: over 64 KiB.
    let huge = json!({ "name": "x".repeat(70 * 1024) });
    problem(&admin.post("/admin/v1/tenants", &root, huge).await, 413, None);

    // 422, naming the field.
    problem(&admin.post("/admin/v1/tenants", &root, json!({"name": "  "})).await, 422, Some("name"));
    let agent = |url: &str, secret: &str| json!({"url": url, "signing_secret": secret});
    problem(
        &admin.put(&t("/agent"), &root, agent("http://agent.example/x", AGENT_SECRET)).await,
        422,
        Some("url"),
    );
    problem(
        &admin.put(&t("/agent"), &root, agent("https://127.0.0.1/x", AGENT_SECRET)).await,
        422,
        Some("url"),
    );
    // A Unicode space (what the document's pattern refuses too, so generators never send it).
    problem(
        &admin.put(&t("/agent"), &root, agent("https://agent.example/x#\u{a0}T", AGENT_SECRET)).await,
        422,
        Some("url"),
    );
    problem(
        &admin.put(&t("/agent"), &root, agent("https://agent.example/x", "secret")).await,
        422,
        Some("signing_secret"),
    );
    problem(&admin.get(&t("/events?state=lost"), &root).await, 422, Some("state"));
    let every = admin.get(&t("/events"), &root).await;
    assert_eq!(every.status, 200, "no state: every event ({every:?})");
    problem(&admin.get(&t("/events?state=failed&since=yesterday"), &root).await, 422, Some("since"));
    problem(&admin.get("/admin/v1/tenants?limit=0", &root).await, 422, Some("limit"));
    problem(&admin.get("/admin/v1/tenants?limit=101", &root).await, 422, Some("limit"));
    problem(&admin.get("/admin/v1/tenants?cursor=bm9wZQ", &root).await, 422, Some("cursor"));
    problem(&admin.post(&t("/workspaces"), &root, json!({})).await, 422, Some("team_id"));
    problem(
        &admin.post(&t("/workspaces"), &root, json!({"team_id": "E0123ABCD"})).await,
        422,
        Some("team_id"),
    );
    problem(
        &admin.post(&t("/workspaces"), &root, json!({"team_id": "t0123abcd"})).await,
        422,
        Some("team_id"),
    );
    problem(
        &admin.post(&t("/workspaces"), &root, json!({"enterprise_id": "T0123"})).await,
        422,
        Some("enterprise_id"),
    );
    // 409: a team the tenant has inside one enterprise, asked for inside another.
    assert_eq!(
        admin.post(&t("/workspaces"), &root, json!({"team_id": "TGRID", "enterprise_id": "E1"})).await.status,
        201
    );
    let moved =
        admin.post(&t("/workspaces"), &root, json!({"team_id": "TGRID", "enterprise_id": "E2"})).await;
    problem(&moved, 409, None);
    assert_eq!(moved.body["type"], "urn:doorman:problem:workspace-linked-otherwise");
    problem(
        &admin.post(&t("/install-links"), &root, json!({"expires_in_seconds": 5})).await,
        422,
        Some("expires_in_seconds"),
    );
    // A replay selects failed events since an instant, or the stranded: neither, both, or
    // `stranded: false` is not the shape of either (400).
    for body in [
        json!({"dry_run": true}),
        json!({"failed_since": "2026-01-01T00:00:00Z", "stranded": true}),
        json!({"stranded": false}),
        json!({"failed_since": 5}),
    ] {
        let refused = admin.post(&t("/replays"), &root, body).await;
        problem(&refused, 400, None);
        assert!(!refused.body["detail"].as_str().unwrap().contains("line 0"), "{refused:?}");
    }
    // An instant that is not one is a refused value of its field, as in a query.
    problem(
        &admin.post(&t("/replays"), &root, json!({"failed_since": "garbage"})).await,
        422,
        Some("failed_since"),
    );
    // A replay's body is an object or nothing: null is neither.
    let null = admin.call(Method::POST, &t("/events/Ev1/replay"), Some(&root), Some(Value::Null)).await;
    problem(&null, 400, None);
    // An event type Slack cannot send is refused, not answered with an empty page.
    for kind in ["bad%20type!", "App_mention", "message.", "%00"] {
        problem(&admin.get(&t(&format!("/events?state=failed&type={kind}")), &root).await, 422, Some("type"));
    }
    assert_eq!(admin.get(&t("/events?state=failed&type=message.channels"), &root).await.status, 200);

    // 404: unknown tenant or event; an event with no receipt says `unknown` as `receipts show` does.
    let ghost = TenantId::generate();
    problem(&admin.get(&format!("/admin/v1/tenants/{ghost}"), &root).await, 404, None);
    problem(&admin.get("/admin/v1/tenants/not-a-uuid", &root).await, 404, None);
    let event = admin.get(&t("/events/EvNever"), &root).await;
    problem(&event, 404, None);
    assert_eq!(event.body["event_status"], "unknown");
    let unset = admin.get(&t("/agent"), &root).await;
    assert_eq!(
        unset.body,
        json!({"url": null, "paused": false, "signing_secret_set": false, "failing_since": null, "disabled_at": null}),
        "{unset:?}"
    );
    problem(&admin.call(Method::DELETE, &t("/workspaces/TNONE"), Some(&root), None).await, 404, None);
    problem(&admin.get("/admin/v1/nowhere", &root).await, 404, None);

    // 409: a workspace linked to another tenant; a pause without an agent.
    assert_eq!(admin.post(&t("/workspaces"), &root, json!({"team_id": "TTAKEN"})).await.status, 201);
    let again = admin.post(&t("/workspaces"), &root, json!({"team_id": "TTAKEN"})).await;
    assert_eq!(again.status, 200, "linking it again is a no-op: {again:?}");
    let taken = admin
        .post(&format!("/admin/v1/tenants/{other}/workspaces"), &root, json!({"team_id": "TTAKEN"}))
        .await;
    problem(&taken, 409, None);
    problem(&admin.post(&t("/agent/pause"), &root, json!({})).await, 409, None);

    // 401 with WWW-Authenticate: no key, a wrong one, a malformed one.
    for key in [None, Some("dmk_00000000000000000000000000000000_nope"), Some("hunter2")] {
        let refused = admin.call(Method::GET, "/admin/v1/tenants", key, None).await;
        problem(&refused, 401, None);
        assert_eq!(refused.www_authenticate.as_deref(), Some("Bearer"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_and_read_only_keys_see_and_change_only_what_they_may() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let root = key(&db, None, false).await;
    let mine = admin.tenant(&root, "Mine").await;
    let theirs = admin.tenant(&root, "Theirs").await;
    let scoped = key(&db, Some(&mine), false).await;
    let reader = key(&db, Some(&mine), true).await;
    let every_reader = key(&db, None, true).await;

    // A scoped key lists its own tenant only, and meets another's as if it did not exist.
    let listed = admin.get("/admin/v1/tenants", &scoped).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1, "{listed:?}");
    assert_eq!(listed.body["items"][0]["id"], mine.as_str());
    for path in ["", "/workspaces", "/agent", "/installations", "/events?state=failed", "/events/Ev1"] {
        let hidden = admin.get(&format!("/admin/v1/tenants/{theirs}{path}"), &scoped).await;
        problem(&hidden, 404, None);
        assert!(!hidden.body.to_string().contains("Theirs"), "{hidden:?}");
    }
    let write = admin
        .post(&format!("/admin/v1/tenants/{theirs}/workspaces"), &scoped, json!({"team_id": "T9"}))
        .await;
    problem(&write, 404, None);
    problem(&admin.get(&format!("/admin/v1/audit?tenant={theirs}"), &scoped).await, 404, None);
    // Only a key for every tenant creates tenants.
    problem(&admin.post("/admin/v1/tenants", &scoped, json!({"name": "Nope"})).await, 403, None);
    problem(&admin.post("/admin/v1/tenants", &every_reader, json!({"name": "Nope"})).await, 403, None);
    // It changes its own tenant, but links no workspace by id: those come through an install
    // link, where Slack proves the workspace is the customer's.
    let by_id = admin
        .post(&format!("/admin/v1/tenants/{mine}/workspaces"), &scoped, json!({"team_id": "TMINE"}))
        .await;
    problem(&by_id, 403, None);
    assert!(by_id.body["detail"].as_str().unwrap().contains("install link"), "{by_id:?}");
    let link = admin.post(&format!("/admin/v1/tenants/{mine}/install-links"), &scoped, json!({})).await;
    assert_eq!(link.status, 201, "{link:?}");
    let linked =
        admin.post(&format!("/admin/v1/tenants/{mine}/workspaces"), &root, json!({"team_id": "TMINE"})).await;
    assert_eq!(linked.status, 201, "{linked:?}");

    // A read-only key reads and is forbidden every change (another tenant's still reads as 404).
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{mine}/workspaces"), &reader).await.status, 200);
    let mine_path = |rest: &str| format!("/admin/v1/tenants/{mine}{rest}");
    problem(&admin.post(&mine_path("/workspaces"), &reader, json!({"team_id": "T2"})).await, 403, None);
    problem(&admin.put(&mine_path("/retain-payloads"), &reader, json!({"enabled": true})).await, 403, None);
    problem(&admin.put(&mine_path("/redelivery"), &reader, json!({"enabled": true})).await, 403, None);
    let allowance = mine_path("/read-only-portals-read-payloads");
    problem(&admin.put(&allowance, &reader, json!({"enabled": true})).await, 403, None);
    problem(&admin.post(&mine_path("/agent/pause"), &reader, json!({})).await, 403, None);
    problem(
        &admin.call(Method::DELETE, &mine_path("/workspaces/TMINE"), Some(&reader), None).await,
        403,
        None,
    );
    problem(&admin.post(&mine_path("/install-links"), &reader, json!({})).await, 403, None);
    problem(
        &admin
            .post(&format!("/admin/v1/tenants/{theirs}/workspaces"), &reader, json!({"team_id": "T3"}))
            .await,
        404,
        None,
    );
    let dry = admin.post(&mine_path("/replays"), &reader, json!({"stranded": true, "dry_run": true})).await;
    assert_eq!(dry.status, 200, "a dry run changes nothing: {dry:?}");
    problem(&admin.post(&mine_path("/replays"), &reader, json!({"stranded": true})).await, 403, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_refused_at_once_by_every_admin_process() {
    let db = TestDatabase::create().await;
    let (one, two) = (Admin::start(&db, &[]).await, Admin::start(&db, &[]).await);
    let created = ok(&doorman(db.url(), &["admin", "keys", "create", "--name", "support", "--json"]));
    let created: Value = serde_json::from_str(&created).unwrap();
    let (id, key) = (created["id"].as_str().unwrap(), created["key"].as_str().unwrap());
    assert!(key.starts_with("dmk_"));
    for admin in [&one, &two] {
        assert_eq!(admin.get("/admin/v1/tenants", key).await.status, 200);
    }
    let listed = ok(&doorman(db.url(), &["admin", "keys", "list"]));
    assert!(listed.contains(id) && listed.contains("support") && !listed.contains(key), "{listed}");

    ok(&doorman(db.url(), &["admin", "keys", "revoke", id]));
    for admin in [&one, &two] {
        problem(&admin.get("/admin/v1/tenants", key).await, 401, None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_identical_creations_make_one_tenant_and_a_different_body_is_unprocessable() {
    let db = TestDatabase::create().await;
    let admin = std::sync::Arc::new(Admin::start(&db, &[]).await);
    let root = key(&db, None, false).await;
    let answers = futures_util::future::join_all((0..20).map(|_| {
        let (admin, root) = (admin.clone(), root.clone());
        async move {
            let request = admin
                .http
                .post(format!("{}/admin/v1/tenants", admin.base))
                .bearer_auth(&root)
                .header("idempotency-key", "onboard-acme")
                .json(&json!({"name": "Acme"}));
            answer(request.send().await.unwrap()).await
        }
    }))
    .await;
    // Each is answered with the tenant, or (draft-ietf-httpapi-idempotency-key-header) told
    // with a 409 that the first request under the key is still being processed.
    let created: Vec<&Value> = answers.iter().filter(|a| a.status == 201).map(|a| &a.body).collect();
    for answer in answers.iter().filter(|a| a.status != 201) {
        problem(answer, 409, Some("Idempotency-Key"));
        assert_eq!(answer.body["type"], "urn:doorman:problem:idempotency-key-in-use", "{answer:?}");
    }
    let repeat = admin
        .http
        .post(format!("{}/admin/v1/tenants", admin.base))
        .bearer_auth(&root)
        .header("idempotency-key", "onboard-acme")
        .json(&json!({"name": "Acme"}));
    let repeat = answer(repeat.send().await.unwrap()).await;
    assert_eq!(repeat.status, 201, "once the first has finished, its answer: {repeat:?}");
    for body in created {
        assert_eq!(body, &repeat.body, "every answer is the first one");
    }
    let listed = admin.get("/admin/v1/tenants", &root).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1, "exactly one tenant: {listed:?}");

    let other = admin
        .http
        .post(format!("{}/admin/v1/tenants", admin.base))
        .bearer_auth(&root)
        .header("idempotency-key", "onboard-acme")
        .json(&json!({"name": "Not Acme"}));
    let reused = answer(other.send().await.unwrap()).await;
    problem(&reused, 422, Some("Idempotency-Key"));
    assert_eq!(reused.body["type"], "urn:doorman:problem:idempotency-key-reused", "{reused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_not_in_the_database_in_clear_in_any_column_nor_in_a_dump() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let key = key(&db, None, false).await;
    // `dmk_<key id>_<secret>`: the secret is base64url, which may itself hold `_`.
    let secret = key.splitn(3, '_').nth(2).unwrap().to_owned();
    assert_eq!(admin.get("/admin/v1/tenants", &key).await.status, 200, "the key works");

    #[derive(diesel::QueryableByName)]
    struct Text {
        #[diesel(sql_type = diesel::sql_types::Text)]
        text: String,
    }
    use diesel_async::RunQueryDsl;
    let mut conn = db.owner().await;
    let tables: Vec<Text> = diesel::sql_query(
        "SELECT table_name::text AS text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t.text == "admin_keys"));
    for table in tables {
        let rows: Vec<Text> = diesel::sql_query(format!("SELECT t::text AS text FROM \"{}\" t", table.text))
            .load(&mut conn)
            .await
            .unwrap();
        for row in rows {
            assert!(!row.text.contains(&secret) && !row.text.contains(&key), "{}: {}", table.text, row.text);
        }
    }
    let dump = std::process::Command::new("pg_dump")
        .arg("--data-only")
        .arg(db.url())
        .output()
        .expect("pg_dump runs");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("admin_keys"), "the dump has the keys' table");
    assert!(!dump.contains(&secret), "the key's secret is not in the dump");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_through_either_face_are_audited_with_who_and_which_request() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let created = admin
        .http
        .post(format!("{}/admin/v1/tenants", admin.base))
        .bearer_auth(&root)
        .header("x-request-id", "req-onboard-42")
        .json(&json!({"name": "Acme"}))
        .send()
        .await
        .unwrap();
    let created = answer(created).await;
    assert_eq!(created.request_id.as_deref(), Some("req-onboard-42"), "echoed");
    let tenant = created.body["id"].as_str().unwrap().to_owned();
    ok(&doorman(db.url(), &["tenant", "retain-payloads", "--tenant", &tenant, "on"]));

    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    let items = trail.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{trail:?}");
    let (cli, api) = (&items[0], &items[1]);
    assert_eq!(
        (cli["action"].clone(), cli["actor_kind"].clone(), cli["actor_name"].clone()),
        (json!("tenant.retain_payloads"), json!("cli"), json!("cli"))
    );
    assert!(cli["actor_id"].as_str().is_some_and(|user| !user.is_empty()), "the OS user: {cli}");
    assert_eq!(cli["target"], "on");
    assert_eq!((api["action"].clone(), api["actor_kind"].clone()), (json!("tenant.create"), json!("key")));
    assert_eq!(
        (api["actor_name"].clone(), api["request_id"].clone()),
        (json!("test key"), json!("req-onboard-42"))
    );
    assert_eq!(api["tenant_id"], tenant.as_str());

    let printed = ok(&doorman(db.url(), &["admin", "audit", "--tenant", &tenant, "--json"]));
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed.as_array().unwrap().len(), 2, "the CLI reads the same trail: {printed}");
    assert!(!trail.body.to_string().contains("dmk_"), "never a key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_their_cursor_and_install_links_and_replays_answer_as_documented() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(admin.tenant(&root, &format!("T{i}")).await);
    }
    let mut seen = Vec::new();
    let mut path = "/admin/v1/tenants?limit=2".to_owned();
    loop {
        let page = admin.get(&path, &root).await;
        seen.extend(
            page.body["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/admin/v1/tenants?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, made);
    // Any cursor of the listing's documented shape names a position (here: before them all);
    // another shape is refused, naming `cursor`.
    let anywhere = admin.get("/admin/v1/tenants?cursor=0.00000000-0000-0000-0000-000000000000", &root).await;
    assert_eq!(anywhere.body["items"].as_array().map(Vec::len), Some(5), "{anywhere:?}");
    let pattern = admin.call(Method::GET, "/admin/v1/openapi.json", None, None).await.body["paths"]
        ["/admin/v1/tenants"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "cursor")
        .map(|p| p["schema"]["pattern"].clone());
    assert!(pattern.is_some_and(|p| p.is_string()), "the document states the cursor's shape");
    problem(&admin.get("/admin/v1/tenants?cursor=0.not-a-tenant", &root).await, 422, Some("cursor"));

    let tenant = &made[0];
    let link = admin
        .post(
            &format!("/admin/v1/tenants/{tenant}/install-links"),
            &root,
            json!({"expires_in_seconds": 3600}),
        )
        .await;
    assert_eq!(link.status, 201, "{link:?}");
    assert!(link.body["url"].as_str().unwrap().starts_with("https://doorman.example/slack/install/"));
    let installations = admin.get(&format!("/admin/v1/tenants/{tenant}/installations"), &root).await;
    assert_eq!(installations.body, json!({"items": []}));
    problem(
        &admin
            .call(Method::DELETE, &format!("/admin/v1/tenants/{tenant}/installations/T1"), Some(&root), None)
            .await,
        404,
        None,
    );

    let replay =
        admin.replayed(&format!("/admin/v1/tenants/{tenant}/events/EvNone/replay"), &root, json!({})).await;
    assert_eq!(replay["events"][0]["outcome"], "unknown", "{replay}");
    let kept = admin
        .put(&format!("/admin/v1/tenants/{tenant}/retain-payloads"), &root, json!({"enabled": true}))
        .await;
    assert_eq!(kept.body, json!({"enabled": true}));
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{tenant}"), &root).await.body["retain_payloads"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redelivery_is_turned_on_with_a_schedule_and_off_refused_with_its_reason_and_audited() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Redelivered").await;
    let reader = key(&db, Some(&tenant), true).await;
    let doc = format!("/admin/v1/tenants/{tenant}");
    let setting = format!("{doc}/redelivery");
    assert_eq!(admin.get(&doc, &root).await.body["redelivery"], Value::Null, "off by default");

    let on = admin.put(&setting, &root, json!({"enabled": true, "schedule": "5s,5m,30m"})).await;
    assert_eq!(
        (on.status, on.body.clone()),
        (StatusCode::OK, json!({"enabled": true, "schedule": "5s,5m,30m"}))
    );
    let read = admin.get(&doc, &root).await.body;
    assert_eq!(read["redelivery"], json!({"schedule": "5s,5m,30m", "seconds": [5, 300, 1800]}), "{read}");
    assert_eq!(read["retain_payloads"], false, "a setting of its own");
    let listed = admin.get("/admin/v1/tenants", &root).await.body;
    assert_eq!(listed["items"][0]["redelivery"]["schedule"], "5s,5m,30m", "{listed}");

    // Left out, the schedule is the standard one, answered spelled out.
    let standard = admin.put(&setting, &root, json!({"enabled": true})).await;
    assert_eq!(standard.body, json!({"enabled": true, "schedule": "5s,5m,30m,2h,5h,10h,10h"}));
    let seconds = json!([5, 300, 1800, 7200, 18000, 36000, 36000]);
    assert_eq!(admin.get(&doc, &root).await.body["redelivery"]["seconds"], seconds);

    // A refused schedule is a 422 naming `schedule` with the reason; nothing changes, nothing is
    // audited. So is a read-only key's change (403).
    for (body, reason) in [
        (json!({"enabled": true, "schedule": "5x"}), "must be delays like `5s,5m,30m,2h`"),
        (json!({"enabled": true, "schedule": "5s,25h"}), "has a delay below 0 or above 24 hours"),
        (json!({"enabled": true, "schedule": "1s,".repeat(21) + "1s"}), "has more than 20 delays"),
        (json!({"enabled": false, "schedule": "5x"}), "must be delays like `5s,5m,30m,2h`"),
    ] {
        let refused = admin.put(&setting, &root, body.clone()).await;
        problem(&refused, 422, Some("schedule"));
        assert!(refused.body["detail"].as_str().unwrap().contains(reason), "{body}: {refused:?}");
    }
    problem(&admin.put(&setting, &root, json!({"enabled": true, "every": "5s"})).await, 400, Some("every"));
    problem(&admin.put(&setting, &reader, json!({"enabled": false})).await, 403, None);
    assert_eq!(admin.get(&doc, &root).await.body["redelivery"]["seconds"], seconds, "unchanged");

    // Off with a schedule given anyway: checked, not kept.
    let off = admin.put(&setting, &root, json!({"enabled": false, "schedule": "5s,5m,30m"})).await;
    assert_eq!((off.status, off.body), (StatusCode::OK, json!({"enabled": false, "schedule": null})));
    assert_eq!(admin.get(&doc, &root).await.body["redelivery"], Value::Null);

    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await.body;
    let entries: Vec<&str> = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "tenant.redelivery")
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(entries, ["off", "5s,5m,30m,2h,5h,10h,10h", "5s,5m,30m"], "only the changes made: {trail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_served_without_a_key_and_matches_the_committed_copy() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let served = admin.call(Method::GET, "/admin/v1/openapi.json", None, None).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.body["openapi"], "3.1.0");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/admin-api.json");
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("docs/admin-api.json exists"))
            .expect("docs/admin-api.json is JSON");
    // (Not assert_eq!: the whole document twice is no help; `just openapi` shows the change.)
    assert!(served.body == committed, "docs/admin-api.json is stale: run `just openapi`");
    assert_eq!(admin.call(Method::GET, "/healthz", None, None).await.status, 200);
    assert_eq!(admin.call(Method::GET, "/readyz", None, None).await.status, 200);
    // Metrics on an address of their own, not the API's.
    problem(&admin.call(Method::GET, "/metrics", None, None).await, 404, None);
    let metrics = admin.http.get(format!("{}/metrics", admin.metrics_base)).send().await.unwrap();
    assert!(metrics.text().await.unwrap().contains("doorman_admin_http_requests_total"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_secret_or_token_reaches_the_admin_processs_logs_or_answers() {
    // The binary at debug level: its logs are this test's alone, and as verbose as they get.
    let db = TestDatabase::create().await;
    let env = [
        ("DATABASE_URL", db.admin_url()),
        ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS.to_owned()),
        ("DOORMAN_AGENT_ALLOW_PRIVATE", "true".to_owned()),
        ("RUST_LOG", "debug".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let process = doorman_testkit::ServeProcess::spawn_admin(
        env!("CARGO_BIN_EXE_doorman").as_ref(),
        &env,
        &["--workers", "1"],
    )
    .expect("doorman admin serve starts");
    let root = key(&db, None, false).await;
    let http = http_client();
    let base = process.base().to_owned();
    let call = |method: Method, path: &str, key: &str, body: Value| {
        let request = http.request(method, format!("{base}{path}")).bearer_auth(key).json(&body);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let mut bodies = Vec::new();
    let created = call(Method::POST, "/admin/v1/tenants", &root, json!({"name": "Acme"})).await;
    let tenant = serde_json::from_str::<Value>(&created).unwrap()["id"].as_str().unwrap().to_owned();
    bodies.push(created);
    let agent = json!({"url": "http://127.0.0.1:9/agent?tenant=globex&v=2", "signing_secret": AGENT_SECRET});
    bodies.push(call(Method::PUT, &format!("/admin/v1/tenants/{tenant}/agent"), &root, agent).await);
    let refused = json!({"url": "ftp://x", "signing_secret": "whsec_bm90LWJhc2U2NCE"});
    bodies.push(call(Method::PUT, &format!("/admin/v1/tenants/{tenant}/agent"), &root, refused).await);
    let wrong = format!("{root}wrong");
    bodies.push(call(Method::GET, "/admin/v1/tenants", &wrong, json!(null)).await);
    let shown = call(Method::GET, &format!("/admin/v1/tenants/{tenant}/agent"), &root, json!(null)).await;
    // The agent's URL is an address, shown whole (its query is how dispatches reach the agent).
    assert!(shown.contains(r#""url":"http://127.0.0.1:9/agent?tenant=globex&v=2""#), "{shown}");
    bodies.push(shown);

    let logs = process.logs();
    assert!(logs.contains("admin request") && logs.contains("401"), "the process did log: {logs}");
    // The refused attempt is logged with the key's id (public), why, and where it came from.
    let key_id = uuid::Uuid::parse_str(root.split('_').nth(1).unwrap()).unwrap().to_string();
    let refusal = logs
        .lines()
        .find(|l| l.contains("no valid key"))
        .unwrap_or_else(|| panic!("a refusal is logged: {logs}"));
    for part in [key_id.as_str(), "wrong_secret", "127.0.0.1"] {
        assert!(refusal.contains(part), "{part} in {refusal}");
    }
    // `dmk_<key id>_<secret>`: the secret is base64url, which may itself hold `_`.
    let key_secret = root.splitn(3, '_').nth(2).unwrap();
    let encryption_key = TEST_KEYS.trim_start_matches("test:");
    let agent_key = AGENT_SECRET.trim_start_matches("whsec_");
    for secret in [key_secret, &root, &wrong, AGENT_SECRET, agent_key, encryption_key] {
        assert!(!logs.contains(secret), "a secret reached the logs: {secret}");
        assert!(
            bodies.iter().all(|b| !b.contains(secret)),
            "a secret reached an answer: {secret} in {bodies:?}"
        );
    }
}

/// Decision 20 through the API: a link never takes deliveries another tenant's link receives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_cannot_link_a_team_inside_an_enterprise_another_tenant_holds_org_wide_nor_the_reverse() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let (org, team) = (admin.tenant(&root, "Org").await, admin.tenant(&root, "Team").await);
    let links = |tenant: &str| format!("/admin/v1/tenants/{tenant}/workspaces");
    assert_eq!(admin.post(&links(&org), &root, json!({"enterprise_id": "E1"})).await.status, 201);
    problem(
        &admin.post(&links(&team), &root, json!({"team_id": "T5", "enterprise_id": "E1"})).await,
        409,
        None,
    );
    assert_eq!(
        admin.post(&links(&team), &root, json!({"team_id": "T6", "enterprise_id": "E2"})).await.status,
        201
    );
    problem(&admin.post(&links(&org), &root, json!({"enterprise_id": "E2"})).await, 409, None);
    let org_links = admin.get(&links(&org), &root).await;
    assert_eq!(org_links.body["items"].as_array().map(Vec::len), Some(1), "{org_links:?}");
}

/// An agent's URL is the address dispatches go to, query and all: the API's answer, the audit
/// entry and the console's tenant page show it whole, as it was set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_url_is_shown_whole_with_its_query_in_the_answer_the_audit_and_the_console() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Globex").await;
    let url = "http://127.0.0.1:9/agent?tenant=globex&v=2";
    let set = admin
        .put(
            &format!("/admin/v1/tenants/{tenant}/agent"),
            &root,
            json!({"url": url, "signing_secret": AGENT_SECRET}),
        )
        .await;
    assert_eq!(set.body["url"], url, "{set:?}");
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{tenant}/agent"), &root).await.body["url"], url);
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await;
    let audited =
        trail.body["items"].as_array().unwrap().iter().find(|e| e["action"] == "agent.set").cloned();
    assert_eq!(audited.map(|e| e["target"].clone()), Some(json!(url)), "{trail:?}");

    // The console's tenant page, signed in with the key (no browser needed to read it).
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let signed_in = http
        .post(format!("{}/console/sign-in", admin.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(crate::helpers::form_urlencoded_pair("key", &root))
        .send()
        .await
        .unwrap();
    let cookie = signed_in.headers().get("set-cookie").and_then(|c| c.to_str().ok()).unwrap_or_default();
    let session = cookie.split(';').next().unwrap_or_default().to_owned();
    assert!(!session.is_empty(), "a session: {signed_in:?}");
    let page = http
        .get(format!("{}/console/tenants/{tenant}", admin.base))
        .header("cookie", session)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // (HTML escapes `&`, as `&#38;` here: read back as text.)
    let text = page.replace("&#38;", "&").replace("&amp;", "&");
    assert!(text.contains(&format!("<code>{url}</code>")), "{page}");
}

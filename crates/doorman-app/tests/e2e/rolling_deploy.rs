//! Migrations beside a serving Doorman: one `doorman migrate` at a time, and a migration that
//! cannot take its locks gives up quickly and tries again rather than queue every claim behind
//! it.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_testkit::database::TestDatabase;

fn migrate(url: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_doorman"))
        .arg("migrate")
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("doorman migrate starts")
}

fn finished(child: std::process::Child) -> (Output, String) {
    let output = child.wait_with_output().unwrap();
    let logs = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "doorman migrate failed: {logs}");
    (output, logs)
}

#[derive(QueryableByName)]
struct Versions {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    applied: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    distinct_versions: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_migrations_started_together_run_one_after_the_other() {
    let db = TestDatabase::create_empty().await;
    let (first, second) = (migrate(db.url()), migrate(db.url()));
    let ((_, a), (_, b)) = (finished(first), finished(second));
    let applied_by = |logs: &str| logs.lines().filter(|l| l.contains("applied migration")).count();
    assert_eq!(
        applied_by(&a) + applied_by(&b),
        doorman_adapters::postgres::migrations::embedded_count(),
        "each migration applied once, by one of them:\n{a}\n{b}"
    );
    let versions: Versions = diesel::sql_query(
        "SELECT count(*) AS applied, count(DISTINCT version) AS distinct_versions FROM __diesel_schema_migrations",
    )
    .get_result(&mut db.owner().await)
    .await
    .unwrap();
    assert_eq!(versions.applied, versions.distinct_versions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_cannot_take_its_locks_gives_up_after_five_seconds_and_tries_again() {
    let db = TestDatabase::create_empty().await;
    // The previous release's schema.
    while let Some(version) = doorman_testkit::migrations::run_next(db.url()).await.unwrap() {
        if version == "20261201000004" {
            break;
        }
    }
    // A long transaction holding a lock the next migration's ALTER TABLE needs.
    let mut blocker = diesel_async::AsyncPgConnection::establish(db.url()).await.unwrap();
    diesel::sql_query("BEGIN").execute(&mut blocker).await.unwrap();
    diesel::sql_query("SELECT count(*) FROM messaging_event_receipts").execute(&mut blocker).await.unwrap();

    let started = Instant::now();
    let child = migrate(db.url());
    tokio::time::sleep(Duration::from_secs(7)).await;
    diesel::sql_query("COMMIT").execute(&mut blocker).await.unwrap();
    let (_, logs) = finished(child);
    assert!(started.elapsed() >= Duration::from_secs(7));
    assert!(logs.contains("could not take its locks in time; trying it again"), "{logs}");
    assert!(logs.contains("lock timeout"), "the cause is named: {logs}");
}

/// The previous release's binary (deploy/previous-release), built by `just previous-release`
/// beside today's (in the same target directory).
fn previous_release() -> std::path::PathBuf {
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_doorman")).with_file_name("doorman-previous");
    assert!(
        built.exists(),
        "the rolling-deploy test needs the previous release: run `just previous-release`"
    );
    built
}

/// Expand, then contract: today's migrations remove nothing the previous release calls, so a
/// process of it keeps serving while the new one is rolled out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_release_keeps_serving_on_todays_schema() {
    use crate::helpers::{AGENT_SECRET, SIGNING_SECRET, command_body, event_body, http_client, quiesce};
    use doorman_testkit::FakeAgent;
    use doorman_testkit::database::{TEST_KEYS, tenant_with_agent};
    use doorman_testkit::slack::sign;

    let db = TestDatabase::create().await; // today's schema
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&db.operator(), "TPREV", agent.url(), AGENT_SECRET).await;
    let env = [
        ("DATABASE_URL", db.server_url()),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET.to_owned()),
        ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS.to_owned()),
        ("DOORMAN_AGENT_ALLOW_PRIVATE", "true".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let previous = doorman_testkit::ServeProcess::spawn(&previous_release(), &env, &[]).expect("it starts");
    let (http, base) = (http_client(), previous.base().to_owned());
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200, "the previous release finds its migrations applied");

    let send = |route: &'static str, content_type: &'static str, body: String, attempt: Option<u32>| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let timestamp = chrono::Utc::now().timestamp();
            let mut request = http
                .post(format!("{base}{route}"))
                .header("content-type", content_type)
                .header("x-slack-request-timestamp", timestamp.to_string())
                .header("x-slack-signature", sign(SIGNING_SECRET, timestamp, body.as_bytes()));
            if let Some(attempt) = attempt {
                request = request.header("x-slack-retry-num", attempt.to_string());
            }
            request.body(body).send().await.unwrap().status().as_u16()
        }
    };
    for i in 0..5 {
        assert_eq!(
            send("/slack/events", "application/json", event_body("TPREV", &format!("EvPrev{i}")), None).await,
            200
        );
    }
    assert_eq!(send("/slack/events", "application/json", event_body("TPREV", "EvPrev0"), Some(1)).await, 200);
    let form = "application/x-www-form-urlencoded";
    assert_eq!(send("/slack/commands", form, command_body("TPREV"), None).await, 200);
    quiesce(&http, previous.metrics_base()).await;
    assert_eq!(agent.count(), 6, "five events once each and the command");
    for i in 0..5 {
        assert_eq!(agent.count_for(&format!("EvPrev{i}")), 1);
    }
    let stranded = db.operator().stranded().await;
    assert!(stranded.is_empty(), "every receipt it claimed was completed: {stranded:?}");
    previous.stop(Duration::from_secs(10)).await;
}

/// The previous release's operator replays on today's schema: `receipts replay` (as
/// `doorman_admin`) sends a failed event's kept payload again and records its outcome, which
/// it does through `doorman_record_outcomes`: a grant today's role split took away, given back
/// for one release by `previous_release_records_replay_outcomes`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_release_replays_a_failed_event_and_records_its_outcome_on_todays_schema() {
    use crate::helpers::{AGENT_SECRET, doorman, http_client, ok, post_event, quiesce, spawn_serve};
    use doorman_testkit::FakeAgent;
    use doorman_testkit::database::{TEST_KEYS, tenant_with_agent};

    let db = TestDatabase::create().await; // today's schema
    let agent = FakeAgent::start(AGENT_SECRET);
    let tenant = tenant_with_agent(&db.operator(), "TPREVR", agent.url(), AGENT_SECRET).await;
    ok(&doorman(db.url(), &["tenant", "retain-payloads", "--tenant", &tenant.to_string(), "on"]));
    // A failed event whose payload is kept, by today's server.
    agent.answer_with(500);
    let server = spawn_serve(&db, "warn", &[]);
    let http = http_client();
    assert_eq!(post_event(&http, server.base(), "TPREVR", "EvPrevReplay").await, 200);
    quiesce(&http, server.metrics_base()).await;
    server.stop(Duration::from_secs(10)).await;
    assert_eq!(receipt_state(&db, "EvPrevReplay").await, (false, true, true), "failed, payload kept");

    agent.answer_with(200);
    let replayed = Command::new(previous_release())
        .args(["receipts", "replay", "--tenant", &tenant.to_string(), "--event-id", "EvPrevReplay"])
        .env("DATABASE_URL", db.admin_url())
        .env("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS)
        .env("DOORMAN_AGENT_ALLOW_PRIVATE", "true")
        .env("RUST_LOG", "warn")
        .output()
        .expect("the previous release's doorman runs");
    let said = format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert_eq!(agent.count_for("EvPrevReplay"), 1, "the agent got the replay: {said}");
    assert!(replayed.status.success(), "{said}");
    assert_eq!(
        receipt_state(&db, "EvPrevReplay").await,
        (true, true, false),
        "its outcome was recorded: handled (the earlier failure stays on record), the kept payload released; {said}"
    );
}

#[derive(QueryableByName)]
struct ReceiptState {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    handled: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    failed: bool,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    payload_kept: bool,
}

/// Whether `event_id`'s receipt is handled, failed, and its payload kept.
async fn receipt_state(db: &TestDatabase, event_id: &str) -> (bool, bool, bool) {
    let found: ReceiptState = diesel::sql_query(
        "SELECT r.handled_at IS NOT NULL AS handled, r.failure_reason IS NOT NULL AS failed, \
                EXISTS (SELECT FROM messaging_event_payloads p WHERE p.tenant_id = r.tenant_id \
                         AND p.external_event_id = r.external_event_id) AS payload_kept \
           FROM messaging_event_receipts r WHERE r.external_event_id = $1",
    )
    .bind::<diesel::sql_types::Text, _>(event_id)
    .get_result(&mut db.owner().await)
    .await
    .unwrap();
    (found.handled, found.failed, found.payload_kept)
}

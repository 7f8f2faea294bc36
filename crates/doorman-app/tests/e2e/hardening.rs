//! Hardening, end to end: bounded work, secrets at rest, destinations, replays, slow clients.

use std::process::Command;
use std::time::{Duration, Instant};

use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use doorman_testkit::FakeAgent;
use doorman_testkit::database::{TEST_KEYS, TestDatabase, tenant_with_agent};

use crate::helpers::{
    AGENT_SECRET, SIGNING_SECRET, TestApp, WAIT, command_body, doorman, doorman_bare, doorman_with,
    event_body, http_client, post_event, quiesce, raw_request, signature_headers, spawn_serve,
};

// --- 1. bounded work in flight ---------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_agent_holds_at_most_its_bound_and_every_event_is_dispatched_once_after() {
    let db = TestDatabase::create().await;
    let slow = FakeAgent::start_counting(AGENT_SECRET);
    let other = FakeAgent::start_counting(AGENT_SECRET);
    tenant_with_agent(&db.operator(), "TSLOW", slow.url(), AGENT_SECRET).await;
    tenant_with_agent(&db.operator(), "TOTHER", other.url(), AGENT_SECRET).await;
    let server = spawn_serve(&db, "warn", &["--max-in-flight-per-tenant", "64", "--dispatch-timeout", "60s"]);
    let http = http_client();
    let base = server.base().to_owned();
    // The agent holds every request (for up to 30 s) until released.
    slow.close_gate();

    // 300 distinct events at 32 connections.
    let ids: Vec<String> = (0..300).map(|i| format!("EvSlow{i}")).collect();
    let refused = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders: Vec<_> = (0..32)
        .map(|_| {
            let (http, base, ids, refused, next) =
                (http.clone(), base.clone(), ids.clone(), refused.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(id) = ids.get(i) else { return };
                    match post_event(&http, &base, "TSLOW", id).await {
                        200 => {}
                        503 => refused.lock().unwrap().push(id.clone()),
                        other => panic!("{id}: {other}"),
                    }
                }
            })
        })
        .collect();
    for sender in futures_util::future::join_all(senders).await {
        sender.unwrap();
    }
    let refused = refused.lock().unwrap().clone();

    slow.wait_until("64 dispatches held", WAIT, |a| a.in_flight() == 64).await;
    assert_eq!(refused.len(), 300 - 64, "everything past the bound was answered 503");
    let metrics =
        http.get(format!("{}/metrics", server.metrics_base())).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("doorman_in_flight 64"), "{metrics}");
    assert!(metrics.contains(r#"doorman_busy_total{limit="tenant"} 236"#), "{metrics}");
    assert!(metrics.contains(r#"doorman_unavailable_total{reason="busy"} 236"#));

    // Another tenant meanwhile: unaffected.
    for i in 0..20 {
        assert_eq!(post_event(&http, &base, "TOTHER", &format!("EvOther{i}")).await, 200);
    }
    other.wait_until("the other tenant's dispatches", WAIT, |a| a.count() == 20).await;

    let peak_rss_mib = server.peak_rss_kib().unwrap() as f64 / 1024.0;
    assert!(peak_rss_mib < 64.0, "peak RSS {peak_rss_mib:.1} MiB");
    assert_eq!(receipts_of(&db, "EvSlow").await, 64, "the refused deliveries wrote nothing");

    // Released: Slack's retries of the refused events are handled, each once.
    slow.open_gate();
    quiesce(&http, server.metrics_base()).await;
    for id in &refused {
        let deadline = Instant::now() + WAIT;
        while post_event(&http, &base, "TSLOW", id).await != 200 {
            assert!(Instant::now() < deadline, "{id} still refused");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for id in &ids {
        assert_eq!(post_event(&http, &base, "TSLOW", id).await, 200, "{id}: a duplicate now");
    }
    quiesce(&http, server.metrics_base()).await;
    for id in &ids {
        assert_eq!(slow.count_for(id), 1, "{id} dispatched exactly once");
    }
    assert!(
        slow.peak_in_flight() <= 64,
        "the agent never saw more than the bound: {}",
        slow.peak_in_flight()
    );
}

async fn receipts_of(db: &TestDatabase, prefix: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(
        "SELECT count(*) AS n FROM messaging_event_receipts WHERE external_event_id LIKE $1 || '%'",
    )
    .bind::<Text, _>(prefix)
    .get_result::<Found>(&mut db.owner().await)
    .await
    .unwrap()
    .n
}

/// Overload is quiet: a busy 503 is counted every time and logged as a summary at most once
/// a second per reason, with how many since the last line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_busy_answers_are_each_counted_and_logged_in_a_few_summary_lines() {
    let db = TestDatabase::create().await;
    let slow = FakeAgent::start_counting(AGENT_SECRET);
    tenant_with_agent(&db.operator(), "TBUSY", slow.url(), AGENT_SECRET).await;
    let server = spawn_serve(&db, "info", &["--max-in-flight-per-tenant", "4", "--dispatch-timeout", "60s"]);
    let (http, base) = (http_client(), server.base().to_owned());
    slow.close_gate();
    for i in 0..4 {
        assert_eq!(post_event(&http, &base, "TBUSY", &format!("EvHeld{i}")).await, 200);
    }
    slow.wait_until("the bound held", WAIT, |a| a.in_flight() == 4).await;

    let started = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let senders: Vec<_> = (0..32)
        .map(|_| {
            let (http, base, next) = (http.clone(), base.clone(), next.clone());
            tokio::spawn(async move {
                let mut busy = 0;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i >= 1_000 {
                        return busy;
                    }
                    if post_event(&http, &base, "TBUSY", &format!("EvBusy{i}")).await == 503 {
                        busy += 1;
                    }
                }
            })
        })
        .collect();
    let mut busy = 0;
    for sender in futures_util::future::join_all(senders).await {
        busy += sender.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(busy, 1_000, "every one past the bound was answered 503");
    let metrics =
        http.get(format!("{}/metrics", server.metrics_base())).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"doorman_unavailable_total{reason="busy"} 1000"#), "{metrics}");

    // The once-a-second flush reports what no answer did, within two seconds.
    let summaries = || {
        let logs = strip_ansi(&server.logs());
        let lines: Vec<String> =
            logs.lines().filter(|l| l.contains("work in flight at its bound")).map(str::to_owned).collect();
        let counted: u64 = lines
            .iter()
            .filter_map(|l| l.split("answers=").nth(1)?.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        (lines, counted)
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    while summaries().1 < 1_000 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (lines, counted) = summaries();
    assert_eq!(counted, 1_000, "the summaries add up to every answer: {lines:#?}");
    assert!(
        lines.len() as f64 <= 2.0 + seconds.ceil(),
        "{} lines for 1,000 answers in {seconds:.2} s: {lines:#?}",
        lines.len()
    );
    slow.open_gate();
    quiesce(&http, server.metrics_base()).await;
}

/// A log line without its terminal colours.
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

// --- 2. secrets at rest ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_secret_is_nowhere_in_the_database_or_its_dump() {
    let db = TestDatabase::create().await;
    let url = db.url();
    let tenant = String::from_utf8(doorman(url, &["tenant", "add", "--name", "Acme"]).stdout).unwrap();
    let tenant = tenant.trim();
    let set = doorman_with(
        url,
        &[("DOORMAN_AGENT_SECRET", AGENT_SECRET)],
        &["agent", "set", "--tenant", tenant, "--url", "http://127.0.0.1:9/agent"],
    );
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let body = AGENT_SECRET.trim_start_matches("whsec_");

    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        row: String,
    }
    #[derive(diesel::QueryableByName)]
    struct Table {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let mut owner = db.owner().await;
    let tables: Vec<Table> = diesel::sql_query(
        "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public'",
    )
    .load(&mut owner)
    .await
    .unwrap();
    let mut read = 0;
    for Table { name } in tables {
        let rows: Vec<Row> = diesel::sql_query(format!("SELECT t::text AS row FROM \"{name}\" t"))
            .load(&mut owner)
            .await
            .unwrap();
        for Row { row } in rows {
            read += 1;
            assert!(!row.contains(body), "{name} holds the secret: {row}");
        }
    }
    assert!(read > 0);
    let dump = Command::new("pg_dump").arg(url).output().expect("pg_dump (PostgreSQL's client tools)");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.contains("v1:test:"), "the sealed value is in the dump");
    assert!(!dump.contains(body) && !dump.contains(AGENT_SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_names_a_missing_key_and_a_rotation_moves_every_secret_to_the_new_one() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&db.operator(), "T1", agent.url(), AGENT_SECRET).await; // sealed with "test"
    let new_key = "fresh:ZnJlc2gta2V5LWZyZXNoLWtleS1mcmVzaC1rZXktMzI=";
    let server_url = db.server_url();
    let serve_with = |keys: &str| {
        doorman_bare(
            &server_url,
            &[("DOORMAN_ENCRYPTION_KEYS", keys), ("SLACK_SIGNING_SECRET", SIGNING_SECRET)],
            &["serve", "--bind", "127.0.0.1:0", "--drain-timeout", "1s"],
        )
    };

    // Only the new key: the stored secret's key is missing; refused, naming it.
    let refused = serve_with(new_key);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("\"test\"") && stderr.contains("DOORMAN_ENCRYPTION_KEYS"), "{stderr}");
    assert!(
        !stderr.contains("ZnJlc2g") && !stderr.contains(TEST_KEYS.trim_start_matches("test:")),
        "{stderr}"
    );

    // New key first, old one kept: rotate, then the old key can go.
    let both = format!("{new_key},{TEST_KEYS}");
    let rotate = doorman_bare(
        db.url(),
        &[("DOORMAN_ENCRYPTION_KEYS", both.as_str())],
        &["secrets", "rotate", "--json"],
    );
    assert!(rotate.status.success(), "{}", String::from_utf8_lossy(&rotate.stderr));
    let report: serde_json::Value = serde_json::from_slice(&rotate.stdout).unwrap();
    assert_eq!(report, serde_json::json!({"resealed": 1, "key": "fresh"}));
    let again = doorman_bare(
        db.url(),
        &[("DOORMAN_ENCRYPTION_KEYS", both.as_str())],
        &["secrets", "rotate", "--json"],
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&again.stdout).unwrap()["resealed"],
        0,
        "resumable: nothing left"
    );

    let env = [
        ("DATABASE_URL", server_url.as_str()),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        ("DOORMAN_ENCRYPTION_KEYS", new_key),
        ("DOORMAN_AGENT_ALLOW_PRIVATE", "true"),
        ("RUST_LOG", "warn"),
    ];
    let server =
        doorman_testkit::ServeProcess::spawn(env!("CARGO_BIN_EXE_doorman").as_ref(), &env, &[]).unwrap();
    assert_eq!(post_event(&http_client(), server.base(), "T1", "EvRotated").await, 200);
    agent
        .wait_until("the dispatch, signed with the opened secret", WAIT, |a| a.count_for("EvRotated") == 1)
        .await;
    assert_eq!(agent.bad_signatures(), 0);
}

// --- 4. destinations -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_a_private_agent_gets_nothing_and_agent_set_says_why() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    // Stored past the command's check, as if set before this rule or by hand.
    tenant_with_agent(&db.operator(), "T1", agent.url(), AGENT_SECRET).await;
    let url = db.server_url();
    let env = [
        ("DATABASE_URL", url.as_str()),
        ("SLACK_SIGNING_SECRET", SIGNING_SECRET),
        ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS),
        ("RUST_LOG", "warn"),
    ];
    let server =
        doorman_testkit::ServeProcess::spawn(env!("CARGO_BIN_EXE_doorman").as_ref(), &env, &[]).unwrap();
    let http = http_client();
    assert_eq!(post_event(&http, server.base(), "T1", "EvPrivate").await, 200);
    quiesce(&http, server.metrics_base()).await;
    let failed = db.operator().failed().await;
    assert_eq!(failed.len(), 1);
    assert!(failed[0].failure.as_ref().unwrap().reason.starts_with("destination_not_allowed"), "{failed:?}");
    assert_eq!(agent.requests() + agent.bad_signatures(), 0, "nothing was sent");

    let tenant = db.operator().create_tenant("Other").await;
    for agent_url in
        ["http://127.0.0.1:9/agent", "https://169.254.169.254/latest/meta-data", "https://localhost/x"]
    {
        let set = doorman_bare(
            db.url(),
            &[("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS), ("DOORMAN_AGENT_SECRET", AGENT_SECRET)],
            &["agent", "set", "--tenant", &tenant.to_string(), "--url", agent_url],
        );
        let stderr = String::from_utf8_lossy(&set.stderr);
        assert!(!set.status.success(), "{agent_url}");
        assert!(
            stderr.contains("--url refused") && stderr.contains("DOORMAN_AGENT_ALLOW_PRIVATE"),
            "{agent_url}: {stderr}"
        );
    }
}

// --- 5. replays of unnumbered requests -------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_command_or_interaction_gets_401_and_is_not_dispatched() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    let command = command_body("T1");
    let interaction = crate::helpers::form_urlencoded_pair(
        "payload",
        &serde_json::json!({"type": "shortcut", "trigger_id": "13345224609.738474920.8088930838d88f008e0", "team": {"id": "T1"}}).to_string(),
    );
    for (route, body) in [("/slack/commands", command), ("/slack/interactions", interaction)] {
        let timestamp = chrono::Utc::now().timestamp();
        let signature = doorman_testkit::slack::sign(SIGNING_SECRET, timestamp, body.as_bytes());
        let send = || {
            app.post_signed(
                route,
                "application/x-www-form-urlencoded",
                body.as_bytes(),
                None,
                timestamp,
                &signature,
            )
        };
        assert_eq!(send().await.status(), 200, "{route}: first arrival");
        let replay = send().await;
        assert_eq!(replay.status(), 401, "{route}: the same signed request again");
        assert_eq!(replay.json::<serde_json::Value>().await.unwrap()["error"], "replayed");
    }
    app.quiesce().await;
    assert_eq!(app.agent.count(), 2, "each dispatched once");
    assert!(app.metrics().await.contains(r#"doorman_rejections_total{cause="replayed"} 2"#));
}

// --- 6. slow clients -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_in_gets_408_and_others_are_served_meanwhile() {
    let app = TestApp::spawn_with(&["--body-read-timeout", "1s"]).await;
    app.tenant("T1").await;
    let body = event_body("T1", "EvSlowBody");
    // The headers and half the body, then nothing.
    let half = &body.as_bytes()[..body.len() / 2];
    let request = [
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec(),
        signature_headers(body.as_bytes()).into_bytes(),
        format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes(),
        half.to_vec(),
    ]
    .concat();
    let started = Instant::now();
    let slow = tokio::spawn({
        let base = app.base.clone();
        async move { raw_request(&base, &request, Duration::from_secs(10)).await }
    });
    // Meanwhile, a whole request is answered at once.
    assert_eq!(app.event("T1", "EvMeanwhile", None).await.status(), 200);
    let answer = slow.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(5), "{took:?}");
    app.quiesce().await;
    assert_eq!(app.agent.count_for("EvSlowBody"), 0);
}

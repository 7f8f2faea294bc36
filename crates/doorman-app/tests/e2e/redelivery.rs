//! Redelivery end to end on one PostgreSQL (ADR 26), with the `doorman` binary: an agent down
//! under a steady load and then back gets every event a tenant with redelivery on had
//! acknowledged, each `webhook-id` taken once by an agent that drops repeats; the same with
//! two processes, one of them killed (SIGKILL) while redeliveries are due; and a tenant
//! without redelivery is left as before (its failed events stay failed, each sent once).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use diesel_async::RunQueryDsl;
use doorman_testkit::database::{self, TestDatabase};
use doorman_testkit::{FakeAgent, ServeProcess};

use doorman_domain::TenantId;

use crate::helpers::{AGENT_SECRET, doorman, http_client, ok, quiesce, spawn_serve, try_post_event};

/// Short settings, so the whole story fits in a test: a dispatch may take 2 s, a redelivery
/// holds its event 5 s, the runner looks every 200 ms, an open circuit lets a probe through
/// after 1 s.
const FLAGS: &[&str] = &[
    "--workers",
    "1",
    "--dispatch-timeout",
    "2s",
    "--redelivery-hold",
    "5s",
    "--redelivery-every",
    "200ms",
    "--circuit-cooldown",
    "1s",
];

/// Delays that add up to about two minutes: longer than any outage here, so no event's
/// schedule is spent while its agent is down (an open circuit takes no redelivery; each
/// half-open probe spends one).
const SCHEDULE: &str = "{1,2,4,8,16,32,60}";

/// How long every acknowledged event may take to reach the agent once it is back.
const CATCH_UP: Duration = Duration::from_secs(120);

async fn owner_runs(db: &TestDatabase, sql: &str) {
    diesel::sql_query(sql).execute(&mut db.owner().await).await.unwrap();
}

async fn tenant(db: &TestDatabase, agent: &FakeAgent, team: &str, redelivery: bool) -> TenantId {
    let tenant = database::tenant_with_agent(&db.operator(), team, agent.url(), AGENT_SECRET).await;
    if redelivery {
        owner_runs(
            db,
            &format!("UPDATE tenants SET redelivery_schedule = '{SCHEDULE}' WHERE id = '{tenant}'"),
        )
        .await;
    }
    tenant
}

/// Sends unique events for `team` at a steady pace (one every `pace`) for `length`, round
/// robin over the servers; the ids answered 200 (acknowledged), in order.
async fn steady_load(
    bases: Vec<String>,
    team: &'static str,
    length: Duration,
    pace: Duration,
) -> Vec<String> {
    steady_load_with_lost_answers(bases, team, length, pace).await.0
}

/// [`steady_load`], and the events sent whose answer never came (the server was killed while
/// it answered, or before): each may have been claimed, so redelivered, or not.
async fn steady_load_with_lost_answers(
    bases: Vec<String>,
    team: &'static str,
    length: Duration,
    pace: Duration,
) -> (Vec<String>, Vec<String>) {
    let http = http_client();
    let mut acknowledged = Vec::new();
    let mut unanswered = Vec::new();
    let mut ticks = tokio::time::interval(pace);
    let end = tokio::time::Instant::now() + length;
    let mut n = 0usize;
    while tokio::time::Instant::now() < end {
        ticks.tick().await;
        let id = format!("Ev{team}{n:05}");
        let base = &bases[n % bases.len()];
        n += 1;
        // A server that was killed refuses: not acknowledged, as Slack would see it.
        match try_post_event(&http, base, team, &id).await {
            Some(200) => acknowledged.push(id),
            None => unanswered.push(id),
            Some(_) => {}
        }
    }
    (acknowledged, unanswered)
}

/// The webhook ids the agent took (answered 2xx) of `team`'s events.
fn taken(agent: &FakeAgent, team: &str) -> HashSet<String> {
    let prefix = format!("evt_Ev{team}");
    agent.received().into_iter().map(|r| r.webhook_id).filter(|id| id.starts_with(&prefix)).collect()
}

fn ids(acknowledged: &[String]) -> HashSet<String> {
    acknowledged.iter().map(|id| format!("evt_{id}")).collect()
}

/// Waits until the agent has taken every acknowledged event of `team`.
async fn until_all_taken(agent: &FakeAgent, team: &str, acknowledged: &[String]) {
    let expected = ids(acknowledged);
    agent
        .wait_until("every acknowledged event taken by the agent", CATCH_UP, |a| {
            expected.is_subset(&taken(a, team))
        })
        .await;
}

/// Waits until none of `servers` has a dispatch in flight: the agent may have taken an event
/// a moment before its outcome is written (the full suite once read two receipts of the last
/// events unhandled just after the agent had answered them).
async fn settled(servers: &[&ServeProcess]) {
    let http = http_client();
    for server in servers {
        quiesce(&http, server.metrics_base()).await;
    }
}

/// Receipts of `team`'s tenant not handled: (event id, failure reason, redeliveries).
async fn unhandled(db: &TestDatabase, team: &str) -> Vec<(String, Option<String>, i16)> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        external_event_id: String,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        failure_reason: Option<String>,
        #[diesel(sql_type = diesel::sql_types::SmallInt)]
        redeliveries: i16,
    }
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT external_event_id, failure_reason, redeliveries FROM messaging_event_receipts \
         WHERE handled_at IS NULL AND external_event_id LIKE 'Ev{team}%' ORDER BY external_event_id"
    ))
    .load(&mut db.owner().await)
    .await
    .unwrap();
    rows.into_iter().map(|r| (r.external_event_id, r.failure_reason, r.redeliveries)).collect()
}

/// No two signed requests of one event said they were the same redelivery: no attempt was
/// sent twice (by two processes, or by a process and a replay).
fn each_attempt_sent_once(agent: &FakeAgent) {
    let mut seen: HashMap<(String, u64), usize> = HashMap::new();
    for arrival in agent.arrivals() {
        *seen.entry((arrival.webhook_id, arrival.redelivery)).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "attempts sent more than once: {twice:?}");
}

fn serve(db: &TestDatabase) -> ServeProcess {
    spawn_serve(db, "warn", FLAGS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_down_for_30_s_under_load_gets_every_acknowledged_event_once_it_is_back() {
    let db = TestDatabase::create().await;
    let agent = Arc::new(FakeAgent::start(AGENT_SECRET));
    let with_redelivery = tenant(&db, &agent, "TRE", true).await;
    tenant(&db, &agent, "TOFF", false).await;
    let server = serve(&db);
    let bases = vec![server.base().to_owned()];
    let pace = Duration::from_millis(50);
    let length = Duration::from_secs(40);
    let with = tokio::spawn(steady_load(bases.clone(), "TRE", length, pace));
    let without = tokio::spawn(steady_load(bases, "TOFF", length, pace));

    tokio::time::sleep(Duration::from_secs(5)).await;
    agent.answer_with(503);
    tokio::time::sleep(Duration::from_secs(30)).await;
    agent.answer_with(200);
    let (with, without) = (with.await.unwrap(), without.await.unwrap());

    until_all_taken(&agent, "TRE", &with).await;
    settled(&[&server]).await;
    assert_eq!(taken(&agent, "TRE"), ids(&with), "the agent's distinct ids are the events acknowledged");
    assert_eq!(unhandled(&db, "TRE").await, [], "none stranded, failed or lost");
    let again: Vec<_> = agent
        .received()
        .into_iter()
        .filter(|r| r.document["delivery"]["redelivery"].as_u64() > Some(0))
        .collect();
    assert!(!again.is_empty(), "the outage's events came back as redeliveries");
    each_attempt_sent_once(&agent);
    // Its history: the live dispatch failed, then the redeliveries, the last one taken.
    let id = again[0].external_event_id.clone().unwrap();
    let shown = ok(&doorman(
        db.url(),
        &["receipts", "show", "--tenant", &with_redelivery.to_string(), "--event-id", &id],
    ));
    assert!(shown.contains("redelivered"), "{shown}");
    let lines: Vec<&str> = shown.lines().filter(|l| l.trim_start().starts_with(['d', 'r'])).collect();
    assert!(lines.iter().any(|l| l.trim_start().starts_with("dispatch") && l.contains("failed")), "{shown}");
    assert!(
        lines.iter().any(|l| l.trim_start().starts_with("redelivery") && l.contains("handled")),
        "{shown}"
    );

    // Without redelivery, as before: what failed during the outage stays failed, sent once.
    let failed = unhandled(&db, "TOFF").await;
    assert!(!failed.is_empty(), "some of its events failed while the agent was down");
    assert!(
        failed.iter().all(|(_, reason, redeliveries)| reason.is_some() && *redeliveries == 0),
        "{failed:?}"
    );
    let off: Vec<_> =
        agent.arrivals().into_iter().filter(|a| a.webhook_id.starts_with("evt_EvTOFF")).collect();
    let distinct: HashSet<_> = off.iter().map(|a| a.webhook_id.clone()).collect();
    assert_eq!(off.len(), distinct.len(), "no event of a tenant without redelivery was sent twice");
    assert_eq!(taken(&agent, "TOFF").len() + failed.len(), without.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_one_killed_while_redeliveries_are_due_lose_none_and_send_no_attempt_twice() {
    let db = TestDatabase::create().await;
    let agent = Arc::new(FakeAgent::start(AGENT_SECRET));
    tenant(&db, &agent, "TKILL", true).await;
    let mut doomed = serve(&db);
    let survivor = serve(&db);
    let bases = vec![doomed.base().to_owned(), survivor.base().to_owned()];
    let load = tokio::spawn(steady_load_with_lost_answers(
        bases,
        "TKILL",
        Duration::from_secs(16),
        Duration::from_millis(40),
    ));

    // Down from the start: both processes acknowledge, fail, and have redeliveries due.
    agent.answer_with(503);
    tokio::time::sleep(Duration::from_secs(8)).await;
    doomed.signal("KILL");
    assert!(doomed.wait_for_exit(Duration::from_secs(10)).await.is_some(), "killed");
    tokio::time::sleep(Duration::from_secs(2)).await;
    agent.answer_with(200);
    let (acknowledged, unanswered) = load.await.unwrap();

    until_all_taken(&agent, "TKILL", &acknowledged).await;
    settled(&[&survivor]).await;
    // Every acknowledged event, and besides them only events whose answer the kill cut off
    // (claimed before it, so redelivered like the rest; the platform would have sent them
    // again).
    let taken = taken(&agent, "TKILL");
    assert!(ids(&acknowledged).is_subset(&taken));
    let beyond: HashSet<String> = taken.difference(&ids(&acknowledged)).cloned().collect();
    assert!(beyond.is_subset(&ids(&unanswered)), "taken and never sent: {beyond:?}");
    assert_eq!(unhandled(&db, "TKILL").await, [], "the killed process's events too");
    each_attempt_sent_once(&agent);
    drop(survivor);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_schedule_is_given_up_once_stays_failed_and_the_platform_is_told() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let tenant = database::tenant_with_agent(&db.operator(), "TSPENT", agent.url(), AGENT_SECRET).await;
    owner_runs(&db, &format!("UPDATE tenants SET redelivery_schedule = '{{1,1}}' WHERE id = '{tenant}'"))
        .await;
    let webhook = FakeAgent::start(AGENT_SECRET);
    let told = ["--operational-webhook-url", webhook.url(), "--operational-webhook-secret", AGENT_SECRET];
    // A circuit that never opens here (100 failures): each redelivery is sent, none waits.
    let server = spawn_serve(&db, "warn", &[FLAGS, &["--circuit-failures", "100"], &told].concat());
    agent.answer_with(503);
    assert_eq!(try_post_event(&http_client(), server.base(), "TSPENT", "EvTSPENT1").await, Some(200));

    let exhausted = |w: &FakeAgent| {
        w.received()
            .iter()
            .filter(|r| r.document["type"] == "event.exhausted")
            .map(|r| r.document.clone())
            .collect::<Vec<_>>()
    };
    webhook.wait_until("event.exhausted", CATCH_UP, |w| !exhausted(w).is_empty()).await;
    let told = exhausted(&webhook);
    assert_eq!(told[0]["data"]["tenant_id"], tenant.to_string());
    assert_eq!(told[0]["data"]["external_event_id"], "EvTSPENT1");
    // The live dispatch and its two redeliveries, then nothing more: given up once.
    let sent = |a: &FakeAgent| a.arrivals().iter().filter(|a| a.webhook_id == "evt_EvTSPENT1").count();
    assert_eq!(sent(&agent), 3);
    let left = unhandled(&db, "TSPENT").await;
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].1.as_deref(), left[0].2), (Some("agent answered HTTP 503"), 2), "{left:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(sent(&agent), 3, "nothing sent after giving up");
    assert_eq!(exhausted(&webhook).len(), 1, "told once");
}

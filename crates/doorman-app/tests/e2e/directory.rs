//! The directory in memory, coherent across processes: two `doorman serve` processes on one
//! database see a pause, a resume or a new link within 200 ms, also right after their
//! listening connections were killed.

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use doorman_testkit::database::{TestDatabase, tenant_with_agent};
use doorman_testkit::{FakeAgent, ServeProcess};

use crate::helpers::{AGENT_SECRET, WAIT, http_client, metric_value, post_event, spawn_serve};

/// The bound the issue sets for a change to apply in every process.
const WITHIN: Duration = Duration::from_millis(200);

fn serve(db: &TestDatabase) -> ServeProcess {
    spawn_serve(db, "warn", &["--workers", "1"])
}

/// Two processes whose listeners have subscribed, with tenant T1 and its agent.
struct Two {
    db: TestDatabase,
    _agent: FakeAgent,
    processes: [ServeProcess; 2],
    http: reqwest::Client,
    tenant: doorman_domain::TenantId,
    sent: std::cell::Cell<u32>,
}

impl Two {
    async fn start() -> Self {
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let tenant = tenant_with_agent(&db.operator(), "T1", agent.url(), AGENT_SECRET).await;
        let two = Self {
            processes: [serve(&db), serve(&db)],
            db,
            _agent: agent,
            http: http_client(),
            tenant,
            sent: std::cell::Cell::new(0),
        };
        for process in &two.processes {
            two.wait_for_listener(process).await;
        }
        two
    }

    async fn wait_for_listener(&self, process: &ServeProcess) {
        let deadline = Instant::now() + WAIT;
        // The sample line itself: the metric's HELP text also says "…listening 1 while…".
        while !self.metrics(process).await.lines().any(|l| l == "doorman_directory_listening 1") {
            assert!(Instant::now() < deadline, "the directory listener never subscribed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Resolves `process` made in the database since it started (`doorman_directory_lookups_total`).
    async fn lookups(&self, process: &ServeProcess) -> u64 {
        metric_value(&self.http, process.metrics_base(), "doorman_directory_lookups_total").await
    }

    /// Change notices each process has applied (`doorman_directory_notices_total`).
    async fn notices(&self) -> [u64; 2] {
        let mut seen = [0; 2];
        for (i, process) in self.processes.iter().enumerate() {
            seen[i] =
                metric_value(&self.http, process.metrics_base(), "doorman_directory_notices_total").await;
        }
        seen
    }

    /// Waits until each process has applied a notice since `before`: what it remembers from
    /// then on was learned after the change that sent it.
    async fn wait_for_notices_since(&self, before: [u64; 2]) {
        let deadline = Instant::now() + WAIT;
        loop {
            let now = self.notices().await;
            if now.iter().zip(before).all(|(now, before)| *now > before) {
                return;
            }
            assert!(Instant::now() < deadline, "no notice of the change: {before:?} then {now:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Delivers five more events for `team` to each process and asserts none of them asked the
    /// database who `team` is: the directory answered from memory. One delivery first, which may
    /// look it up: the last answer before may have been read while a notice arrived, and such
    /// an answer is not remembered.
    async fn served_from_memory(&self, team: &str) {
        for process in &self.processes {
            self.deliver(process, team).await;
            let before = self.lookups(process).await;
            for _ in 0..5 {
                self.deliver(process, team).await;
            }
            assert_eq!(self.lookups(process).await, before, "{team} was looked up in the database again");
        }
    }

    async fn metrics(&self, process: &ServeProcess) -> String {
        self.http
            .get(format!("{}/metrics", process.metrics_base()))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A fresh event for `team` to `process`; its status.
    async fn deliver(&self, process: &ServeProcess, team: &str) -> (u16, String) {
        self.sent.set(self.sent.get() + 1);
        let id = format!("EvDir{}", self.sent.get());
        (post_event(&self.http, process.base(), team, &id).await, id)
    }

    /// How long after `since` each process first answered `wanted` for `team`, polling both.
    async fn time_until(
        &self,
        since: Instant,
        team: &str,
        wanted: impl Fn(u16, &str) -> bool,
    ) -> [Duration; 2] {
        let mut took = [None, None];
        let deadline = since + WAIT;
        while took.iter().any(Option::is_none) {
            assert!(Instant::now() < deadline, "the change did not apply in both processes: {took:?}");
            for (i, process) in self.processes.iter().enumerate() {
                if took[i].is_none() {
                    let asked = Instant::now();
                    let (status, id) = self.deliver(process, team).await;
                    if wanted(status, &id) {
                        took[i] = Some(asked.duration_since(since));
                    }
                }
            }
        }
        took.map(Option::unwrap)
    }

    async fn claimed(&self, event_id: &str) -> bool {
        #[derive(diesel::QueryableByName)]
        struct Found {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let found: Found = diesel::sql_query(
            "SELECT count(*) AS n FROM messaging_event_receipts WHERE external_event_id = $1",
        )
        .bind::<diesel::sql_types::Text, _>(event_id)
        .get_result(&mut self.db.owner().await)
        .await
        .unwrap();
        found.n == 1
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_and_a_resume_apply_in_both_processes_within_200_ms() {
    let two = Two::start().await;
    // Both have T1 in memory, and serve it from there.
    for process in &two.processes {
        assert_eq!(two.deliver(process, "T1").await.0, 200);
    }
    two.served_from_memory("T1").await;

    let before = two.notices().await;
    two.db.operator().pause(two.tenant, true).await.unwrap();
    let took = two.time_until(Instant::now(), "T1", |status, _| status == 503).await;
    assert!(took.iter().all(|t| *t <= WITHIN), "pause applied after {took:?}");
    two.wait_for_notices_since(before).await;
    two.served_from_memory("T1").await;

    let before = two.notices().await;
    two.db.operator().pause(two.tenant, false).await.unwrap();
    let took = two.time_until(Instant::now(), "T1", |status, _| status == 200).await;
    assert!(took.iter().all(|t| *t <= WITHIN), "resume applied after {took:?}");
    two.wait_for_notices_since(before).await;
    two.served_from_memory("T1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_listeners_killed_a_pause_made_at_once_still_applies_within_200_ms() {
    let two = Two::start().await;
    for process in &two.processes {
        assert_eq!(two.deliver(process, "T1").await.0, 200);
    }

    diesel::sql_query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'doorman-directory-listener' AND datname = current_database()",
    )
    .execute(&mut two.db.owner().await)
    .await
    .unwrap();
    two.db.operator().pause(two.tenant, true).await.unwrap();
    let took = two.time_until(Instant::now(), "T1", |status, _| status == 503).await;
    assert!(took.iter().all(|t| *t <= WITHIN), "pause applied after {took:?}");

    // The listeners come back on their own, and changes are announced again.
    for process in &two.processes {
        two.wait_for_listener(process).await;
    }
    let before = two.notices().await;
    two.db.operator().pause(two.tenant, false).await.unwrap();
    let took = two.time_until(Instant::now(), "T1", |status, _| status == 200).await;
    assert!(took.iter().all(|t| *t <= WITHIN), "resume applied after {took:?}");
    two.wait_for_notices_since(before).await;
    two.served_from_memory("T1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_link_makes_a_workspace_remembered_as_unknown_route_within_200_ms() {
    let two = Two::start().await;
    // Remembered as "not linked" in both.
    for process in &two.processes {
        let (status, id) = two.deliver(process, "TNEW").await;
        assert_eq!(status, 200);
        assert!(!two.claimed(&id).await, "ignored: nothing claimed");
        assert!(two.metrics(process).await.contains("doorman_unknown_workspaces_total 1"));
    }
    two.served_from_memory("TNEW").await;

    let before = two.notices().await;
    two.db.operator().link(two.tenant, Some("TNEW"), None).await.unwrap();
    let linked_at = Instant::now();
    let mut took = [None, None];
    while took.iter().any(Option::is_none) {
        assert!(linked_at.elapsed() < WAIT, "the link did not apply in both processes: {took:?}");
        for (i, process) in two.processes.iter().enumerate() {
            if took[i].is_none() {
                let asked = Instant::now();
                let (status, id) = two.deliver(process, "TNEW").await;
                // A claim is committed before the answer: claimed means routed to T1.
                if status == 200 && two.claimed(&id).await {
                    took[i] = Some(asked.duration_since(linked_at));
                }
            }
        }
    }
    let took = took.map(Option::unwrap);
    assert!(took.iter().all(|t| *t <= WITHIN), "link applied after {took:?}");
    two.wait_for_notices_since(before).await;
    two.served_from_memory("TNEW").await;
}

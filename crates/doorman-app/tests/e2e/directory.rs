//! The directory in memory, coherent across processes: two `doorman serve` processes on one
//! database apply a pause, a resume or a new link as soon as its notice reaches them, and
//! serve nothing from memory while their listeners are cut off. How soon a notice arrives is
//! printed (`directory: … within N ms`), not asserted: it is the machine's speed, not the
//! feature (docs/testing.md).

use std::time::{Duration, Instant};

use diesel_async::RunQueryDsl;
use doorman_testkit::database::{TestDatabase, tenant_with_agent, with_address};
use doorman_testkit::{FakeAgent, FaultProxy, ServeProcess};

use crate::helpers::{AGENT_SECRET, WAIT, http_client, metric_value, post_event, spawn_serve};

fn serve(db: &TestDatabase, listen: Option<&str>) -> ServeProcess {
    match listen {
        None => spawn_serve(db, "warn", &["--workers", "1"]),
        Some(url) => spawn_serve(db, "warn", &["--workers", "1", "--listen-database-url", url]),
    }
}

/// Two processes whose listeners have subscribed, with tenant T1 and its agent.
struct Two {
    db: TestDatabase,
    _agent: FakeAgent,
    processes: [ServeProcess; 2],
    /// Between the listeners and the database, when the test cuts them off.
    listener_proxy: Option<FaultProxy>,
    http: reqwest::Client,
    tenant: doorman_domain::TenantId,
    sent: std::cell::Cell<u32>,
}

impl Two {
    async fn start() -> Self {
        Self::starting(false).await
    }

    /// The same, with both processes' listeners connecting through a [`FaultProxy`].
    async fn start_with_listeners_behind_a_proxy() -> Self {
        Self::starting(true).await
    }

    async fn starting(proxied: bool) -> Self {
        let db = TestDatabase::create().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let tenant = tenant_with_agent(&db.operator(), "T1", agent.url(), AGENT_SECRET).await;
        let listener_proxy = match proxied {
            true => Some(FaultProxy::start(db.server_addr()).await),
            false => None,
        };
        let listen = listener_proxy.as_ref().map(|proxy| with_address(&db.server_url(), proxy.addr()));
        let two = Self {
            processes: [serve(&db, listen.as_deref()), serve(&db, listen.as_deref())],
            db,
            _agent: agent,
            listener_proxy,
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
        self.wait_for_listening(process, true).await;
    }

    /// Waits until `process` reports its listener subscribed (`true`) or not (`false`).
    async fn wait_for_listening(&self, process: &ServeProcess, listening: bool) {
        let deadline = Instant::now() + WAIT;
        // The sample line itself: the metric's HELP text also says "…listening 1 while…".
        let line = format!("doorman_directory_listening {}", u8::from(listening));
        while !self.metrics(process).await.lines().any(|l| l == line) {
            assert!(Instant::now() < deadline, "the directory listener never reported {line}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// After a change just committed (`before`: the notices each process had applied before
    /// it): waits until both processes have applied a notice, then
    /// the very next delivery for `team` to each is answered `status` (what each remembers
    /// from the notice on was read after the change). How long the notice took is printed.
    async fn after_its_notice_every_process_answers(
        &self,
        before: [u64; 2],
        team: &str,
        status: u16,
        change: &str,
    ) {
        let since = Instant::now();
        self.wait_for_notices_since(before).await;
        eprintln!(
            "directory: the {change} was heard by both processes within {} ms",
            since.elapsed().as_millis()
        );
        for process in &self.processes {
            assert_eq!(
                self.deliver(process, team).await.0,
                status,
                "the {change} was not applied by its notice"
            );
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
async fn a_pause_and_a_resume_apply_in_both_processes_by_their_notices() {
    let two = Two::start().await;
    // Both have T1 in memory, and serve it from there.
    for process in &two.processes {
        assert_eq!(two.deliver(process, "T1").await.0, 200);
    }
    two.served_from_memory("T1").await;

    let before = two.notices().await;
    two.db.operator().pause(two.tenant, true).await.unwrap();
    two.after_its_notice_every_process_answers(before, "T1", 503, "pause").await;
    two.served_from_memory("T1").await;

    let before = two.notices().await;
    two.db.operator().pause(two.tenant, false).await.unwrap();
    two.after_its_notice_every_process_answers(before, "T1", 200, "resume").await;
    two.served_from_memory("T1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_listeners_are_cut_off_nothing_is_served_from_memory_and_they_come_back() {
    let two = Two::start_with_listeners_behind_a_proxy().await;
    for process in &two.processes {
        assert_eq!(two.deliver(process, "T1").await.0, 200);
    }
    two.served_from_memory("T1").await;

    // The listeners lose their connections and cannot open new ones: a change made now is
    // announced to nobody.
    let proxy = two.listener_proxy.as_ref().unwrap();
    proxy.refuse();
    for process in &two.processes {
        two.wait_for_listening(process, false).await;
    }
    two.db.operator().pause(two.tenant, true).await.unwrap();
    // Without a listener, memory is bypassed: the very next delivery reads the pause from the
    // database, and so does every one after it.
    for process in &two.processes {
        let before = two.lookups(process).await;
        for _ in 0..3 {
            assert_eq!(two.deliver(process, "T1").await.0, 503, "a stale answer was served from memory");
        }
        assert_eq!(two.lookups(process).await, before + 3, "each delivery was looked up in the database");
    }

    // The listeners come back on their own, and changes are announced again.
    proxy.restore().await;
    for process in &two.processes {
        two.wait_for_listening(process, true).await;
    }
    let before = two.notices().await;
    two.db.operator().pause(two.tenant, false).await.unwrap();
    two.after_its_notice_every_process_answers(before, "T1", 200, "resume").await;
    two.served_from_memory("T1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_link_makes_a_workspace_remembered_as_unknown_route_after_its_notice() {
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
    let linked_at = Instant::now();
    two.db.operator().link(two.tenant, Some("TNEW"), None).await.unwrap();
    two.wait_for_notices_since(before).await;
    eprintln!(
        "directory: the link was heard by both processes within {} ms",
        linked_at.elapsed().as_millis()
    );
    for process in &two.processes {
        let (status, id) = two.deliver(process, "TNEW").await;
        // A claim is committed before the answer: claimed means routed to T1.
        assert_eq!(status, 200);
        assert!(two.claimed(&id).await, "the delivery right after the notice was not routed to T1");
    }
    two.served_from_memory("TNEW").await;
}

//! Doorman on Citus (ADR 22): a coordinator and two workers of the test's own, migrated by
//! `doorman migrate`'s code (receipts, kept payloads and request fingerprints distributed by
//! tenant), two `doorman serve` processes on the coordinator, and tenants chosen so that one's
//! shard is on each worker.
//!
//! Each test checks on the cluster what the rest of the suite checks on one PostgreSQL: an
//! event is claimed once under concurrent re-sends; a tenant's statements see and write only
//! its own rows, on every worker; the directory's changes reach both processes within 200 ms;
//! replay, prune and the admin API's event queries work; and a worker lost mid-load costs only
//! its own tenants, 503 with nothing written, nothing lost or doubled once it is back.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use doorman_adapters::postgres::definitions::{DEFINITIONS, Form};
use doorman_domain::{KeyName, KeyScope, TenantId};
use doorman_testkit::citus::{CitusCluster, WORKERS};
use doorman_testkit::database::{ADMIN_ROLE, SERVER_ROLE, TEST_KEYS, tenant_with_agent};
use doorman_testkit::operator::TestOperator;
use doorman_testkit::slack::sign;
use doorman_testkit::{FakeAgent, ServeProcess};
use serde_json::Value;

use crate::helpers::{
    AGENT_SECRET, PostsById, SIGNING_SECRET, WAIT, directory_notices, doorman, event_body, http_client, ok,
    post_command, quiesce, quiesce_within, serve_config, spawn_serve_on, wait_for_directory_notice_since,
};

/// A node batch's claims in a shard's own table (`messaging_event_receipts_<shard id>`), as
/// pg_stat_statements keeps its text (a `LIKE` pattern: `\_` is an underscore).
const SHARD_CLAIMS: &str = "INSERT INTO public.messaging\\_event\\_receipts\\_1% AS r%";
/// Its kept payloads in their shard's table.
const SHARD_PAYLOADS: &str = "INSERT INTO public.messaging\\_event\\_payloads\\_1% AS p%";
/// Its completions in the receipts' shard's table.
const SHARD_COMPLETIONS: &str = "UPDATE public.messaging\\_event\\_receipts\\_1% AS r SET handled\\_at%";
/// A node batch's hold of its shards (its first round trip: `SELECT set_config(…),
/// public.doorman_hold_shards(…)`).
const HOLDS: &str = "SELECT %public.doorman\\_hold\\_shards(%";
/// A node batch's claims through the distributed table, which Citus routes.
const DISTRIBUTED_CLAIMS: &str = "INSERT INTO public.messaging_event_receipts AS r%";

/// One tenant of the cluster, and the worker its shard is on.
#[derive(Debug, Clone)]
struct Placed {
    team: String,
    tenant: TenantId,
    worker: usize,
}

/// The cluster, its agent, two servers and a tenant on each worker.
struct Run {
    cluster: Arc<CitusCluster>,
    agent: FakeAgent,
    operator: TestOperator,
    /// `placed[w]` has its shard on worker `w`.
    placed: Vec<Placed>,
    servers: Vec<ServeProcess>,
    http: reqwest::Client,
}

impl Run {
    async fn start() -> Self {
        Self::start_with_servers(2).await
    }

    /// The cluster and its tenants, with `servers` `doorman serve` processes (none: nothing
    /// sweeps receipts meanwhile, as their gauges do once a minute).
    async fn start_with_servers(servers: usize) -> Self {
        Self::start_with(servers, &[]).await
    }

    /// The same, each `doorman serve` given `args` too.
    async fn start_with(servers: usize, args: &[&str]) -> Self {
        let cluster = Arc::new(tokio::task::spawn_blocking(CitusCluster::start).await.unwrap());
        cluster.migrate().await;
        let agent = FakeAgent::start(AGENT_SECRET);
        let operator = TestOperator::owner(&cluster.url("postgres"));
        // Tenants' ids are random: make them until each worker holds one.
        let mut placed: Vec<Option<Placed>> = vec![None; WORKERS];
        for n in 0.. {
            assert!(n < 40, "no tenant landed on some worker after {n} tries: {placed:?}");
            let team = format!("TC{n}");
            let tenant = tenant_with_agent(&operator, &team, agent.url(), AGENT_SECRET).await;
            let worker = cluster.worker_of(tenant);
            if placed[worker].is_none() {
                placed[worker] = Some(Placed { team, tenant, worker });
            }
            if placed.iter().all(Option::is_some) {
                break;
            }
        }
        let placed = placed.into_iter().map(Option::unwrap).collect();
        let url = cluster.url(SERVER_ROLE);
        let logs = "warn,doorman_domain::usecases::handle=info";
        let args: Vec<&str> = ["--workers", "1"].iter().chain(args).copied().collect();
        let servers = (0..servers).map(|_| spawn_serve_on(&url, logs, &args)).collect();
        Self { cluster, agent, operator, placed, servers, http: http_client() }
    }

    fn bases(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.base().to_owned()).collect()
    }

    /// Sends each of `tenants` an event through each server until a round of them writes
    /// nothing through the coordinator's batch functions (every server then knows the cluster
    /// and where each tenant is: a request that cannot learn it within 250 ms, as under a
    /// burst on a busy machine, goes through the coordinator, correctly, and is not what the
    /// tests that count statements count), then counts every node's statements afresh.
    async fn warm_up(&self, tenants: &[Placed]) {
        for round in 0..10 {
            self.reset_statement_counts();
            for placed in tenants {
                for (b, base) in self.bases().iter().enumerate() {
                    let id = format!("EvWarm{}r{round}s{b}", placed.team);
                    assert_eq!(post(&self.http, base, &placed.team, &id, 0).await, Some(200));
                }
            }
            self.quiesce().await;
            if self.cluster.calls_of(None, "SELECT %FROM doorman_claim_receipts(%") == 0 {
                self.reset_statement_counts();
                return;
            }
        }
        panic!("the servers still write through the coordinator after 10 rounds: {}", self.logs());
    }

    fn reset_statement_counts(&self) {
        self.cluster.coordinator_sql("SELECT pg_stat_statements_reset()").expect("statements counted afresh");
        for w in 0..WORKERS {
            self.cluster
                .worker_sql(w, "SELECT pg_stat_statements_reset()")
                .expect("statements counted afresh");
        }
    }

    /// Where each server's `/metrics` answers.
    fn metrics_bases(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.metrics_base().to_owned()).collect()
    }

    fn logs(&self) -> String {
        self.servers.iter().map(ServeProcess::logs).collect::<Vec<_>>().join("\n---\n")
    }

    /// Directory notices each server has applied, once its listener has subscribed.
    async fn notices(&self) -> Vec<u64> {
        let mut notices = Vec::new();
        for base in self.metrics_bases() {
            notices.push(directory_notices(&self.http, &base).await);
        }
        notices
    }

    /// Waits until every server has applied a notice since `before` (printing how long the
    /// `change` took to be heard: the machine's speed, not asserted).
    async fn wait_for_notices_since(&self, before: Vec<u64>, change: &str) {
        let since = Instant::now();
        for (base, before) in self.metrics_bases().iter().zip(before) {
            wait_for_directory_notice_since(&self.http, base, before).await;
        }
        eprintln!("citus: the {change} was heard by both servers within {} ms", since.elapsed().as_millis());
    }

    async fn quiesce(&self) {
        for base in self.metrics_bases() {
            quiesce(&self.http, &base).await;
        }
    }

    /// After a worker came back: a claim left unconfirmed while it was down settles on a
    /// backoff of up to 5 s between tries (`ClaimTimeouts`), then dispatches, so this waits
    /// longer than [`Run::quiesce`], and says what was still open if it has to give up.
    async fn quiesce_after_outage(&self) -> Duration {
        let started = Instant::now();
        for base in self.metrics_bases() {
            if !quiesce_within(&self.http, &base, AFTER_OUTAGE).await {
                panic!(
                    "{base} still had dispatches in flight {AFTER_OUTAGE:?} after the load ended; \
                     prepared transactions on the workers {:?}; unhandled receipts {:?}; logs:\n{}",
                    self.prepared_transactions(),
                    self.cluster.coordinator_sql(
                        "SELECT count(*) FROM messaging_event_receipts WHERE handled_at IS NULL"
                    ),
                    self.logs()
                );
            }
        }
        started.elapsed()
    }

    /// Prepared transactions waiting on each worker (a two-phase commit the coordinator
    /// could not finish there, until Citus's recovery does).
    fn prepared_transactions(&self) -> Vec<usize> {
        (0..WORKERS)
            .map(|w| {
                self.cluster
                    .worker_sql(w, "SELECT count(*) FROM pg_prepared_xacts")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(usize::MAX)
            })
            .collect()
    }

    /// Receipts of `event_id` on the coordinator's view of the cluster.
    fn receipts_of(&self, event_id: &str) -> usize {
        self.cluster
            .coordinator_sql(&format!(
                "SELECT count(*) FROM messaging_event_receipts WHERE external_event_id = '{event_id}'"
            ))
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX)
    }

    /// How many receipts each event has, read in one statement on the coordinator.
    fn receipts_per_event(&self) -> std::collections::HashMap<String, usize> {
        self.cluster
            .coordinator_sql(
                "SELECT external_event_id || ' ' || count(*) FROM messaging_event_receipts GROUP BY external_event_id",
            )
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(id, n)| (id.to_owned(), n.parse().unwrap_or(usize::MAX)))
            .collect()
    }

    /// Rows of `tenant` in worker `w`'s own shards of `table` (one of the distributed
    /// tables), read there as the owner.
    fn rows_on_worker(&self, w: usize, table: &str, tenant: TenantId) -> usize {
        self.rows_on_worker_where(w, table, tenant, "true")
    }

    /// The same, of the rows that also meet `condition` (SQL).
    fn rows_on_worker_where(&self, w: usize, table: &str, tenant: TenantId, condition: &str) -> usize {
        let shards = self.cluster.shards_on(w, table);
        let counts: Vec<String> = shards
            .iter()
            .map(|shard| {
                format!("SELECT count(*) AS n FROM {shard} WHERE tenant_id = '{tenant}' AND {condition}")
            })
            .collect();
        self.cluster
            .worker_sql(w, &format!("SELECT sum(n) FROM ({}) AS each", counts.join(" UNION ALL ")))
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX)
    }
}

/// `doorman admin serve` on the coordinator, logged in as doorman_admin's member, and a key.
struct AdminApi {
    process: ServeProcess,
    key: String,
    http: reqwest::Client,
}

impl Run {
    /// The admin API, and a key named `name` of `scope` for it.
    async fn admin_api(&self, name: &str, scope: KeyScope) -> AdminApi {
        let env = [
            ("DATABASE_URL", self.cluster.url(ADMIN_ROLE)),
            ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS.to_owned()),
            ("DOORMAN_AGENT_ALLOW_PRIVATE", "true".to_owned()),
            ("RUST_LOG", "warn".to_owned()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let process =
            ServeProcess::spawn_admin(env!("CARGO_BIN_EXE_doorman").as_ref(), &env, &["--workers", "1"])
                .expect("doorman admin serve starts");
        let (_, key) = self
            .operator
            .use_cases()
            .create_key(self.operator.caller(), KeyName::new(name).unwrap(), scope, None)
            .await
            .unwrap();
        AdminApi { process, key: key.expose().to_owned(), http: self.http.clone() }
    }
}

impl AdminApi {
    /// A request with the key (and a JSON body, if given): its status and JSON answer.
    fn call(
        &self,
        method: reqwest::Method,
        path: String,
        body: Option<Value>,
    ) -> impl std::future::Future<Output = (u16, Value)> + use<> {
        let mut request =
            self.http.request(method, format!("{}{path}", self.process.base())).bearer_auth(&self.key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap_or(Value::Null))
        }
    }
}

/// Posts a signed delivery of `id` for `team`, marked as Slack's `attempt`-th retry.
async fn post(http: &reqwest::Client, base: &str, team: &str, id: &str, attempt: u32) -> Option<u16> {
    let body = event_body(team, id);
    let now = chrono::Utc::now().timestamp();
    let mut request = http
        .post(format!("{base}/slack/events"))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", now.to_string())
        .header("x-slack-signature", sign(SIGNING_SECRET, now, body.as_bytes()))
        .timeout(Duration::from_secs(5))
        .body(body);
    if attempt > 0 {
        request = request
            .header("x-slack-retry-num", attempt.to_string())
            .header("x-slack-retry-reason", "http_timeout");
    }
    request.send().await.ok().map(|r| r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_each_event_is_claimed_once_and_each_tenant_sees_only_its_rows_on_every_worker() {
    let run = Run::start().await;
    // `doorman migrate` again, as after every release: it changes nothing, and the claims below
    // run on Citus's own forms of the hot path's functions (postgres/sql/functions/*.citus.sql;
    // the previous release's form of doorman_write_outcomes forwards to the current one).
    ok(&doorman(&run.cluster.url("postgres"), &["migrate"]));
    let routed = run.cluster.coordinator_sql(
        "SELECT bool_and(CASE proname WHEN 'doorman_set_local' THEN prosrc LIKE '%SET LOCAL%' \
                                      ELSE prosrc LIKE '%FOR v_row IN%' END) FROM pg_proc \
          WHERE proname IN ('doorman_set_local', 'doorman_claim_receipts', 'doorman_claim_requests', 'doorman_write_outcomes') \
            AND NOT (proname = 'doorman_write_outcomes' AND pronargs = 6)",
    );
    assert_eq!(routed.as_deref(), Some("t"), "a second migrate leaves Citus's own functions in place");
    let bases = run.bases();
    run.warm_up(&run.placed).await;
    // Each event sent 8 times at once, to both servers, as Slack re-sends a slow answer.
    let mut sends = Vec::new();
    for placed in &run.placed {
        for e in 0..10 {
            let id = format!("EvOnce{}x{e}", placed.worker);
            for copy in 0..8u32 {
                let (http, base, team, id) =
                    (run.http.clone(), bases[copy as usize % 2].clone(), placed.team.clone(), id.clone());
                sends.push(tokio::spawn(async move { post(&http, &base, &team, &id, copy).await }));
            }
        }
    }
    for send in sends {
        let status = send.await.unwrap();
        assert_eq!(status, Some(200), "every copy is acknowledged: {}", run.logs());
    }
    run.quiesce().await;
    for placed in &run.placed {
        for e in 0..10 {
            let id = format!("EvOnce{}x{e}", placed.worker);
            assert_eq!(run.agent.count_for(&id), 1, "{id} dispatched once: {}", run.logs());
            assert_eq!(run.receipts_of(&id), 1, "{id} has one receipt");
        }
        let once = "external_event_id LIKE 'EvOnce%'";
        assert_eq!(
            run.rows_on_worker_where(placed.worker, "messaging_event_receipts", placed.tenant, once),
            10,
            "the tenant's receipts are on its worker"
        );
    }

    // The claims and outcomes were written on the tenants' workers, by the statements each
    // sends there in its shards' own tables (ADR 24, ADR 30), none through the distributed
    // tables and none through the coordinator's batch functions.
    let cluster = &run.cluster;
    for w in 0..WORKERS {
        let claims = cluster.calls_of(Some(w), SHARD_CLAIMS);
        let outcomes = cluster.calls_of(Some(w), SHARD_COMPLETIONS);
        let held = cluster.calls_of(Some(w), HOLDS);
        assert!(
            claims > 0 && outcomes > 0 && held > 0,
            "worker {w} ran {claims} claim and {outcomes} outcome statements in its shards, holding them {held} times"
        );
        let routed = cluster.calls_of(Some(w), DISTRIBUTED_CLAIMS)
            + cluster.calls_of(Some(w), "UPDATE public.messaging_event_receipts AS r SET handled_at%");
        assert_eq!(routed, 0, "worker {w} wrote through the distributed tables");
        // Its one tenant's claims, batches of every size, are one statement text (an `INSERT …
        // SELECT` from arrays), not one prepared statement per number of rows.
        let texts = cluster.worker_sql(
            w,
            &format!(
                "SELECT count(DISTINCT queryid) FROM pg_stat_statements WHERE query LIKE '{SHARD_CLAIMS}'"
            ),
        );
        assert_eq!(texts.as_deref(), Some("1"), "worker {w}'s claim statements");
    }
    for function in ["doorman_claim_receipts", "doorman_settle_receipts", "doorman_record_outcomes"] {
        let through = cluster.calls_of(None, &format!("SELECT %FROM {function}(%"));
        assert_eq!(through, 0, "{function} was called through the coordinator");
    }

    // `doorman receipts placement` names each tenant's worker and its events of the last hour.
    let placement = doorman(&run.cluster.url("postgres"), &["receipts", "placement", "--json"]);
    ok(&placement);
    let placement: Value = serde_json::from_slice(&placement.stdout).unwrap();
    for placed in &run.placed {
        let row = placement["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["tenant"] == placed.tenant.to_string())
            .expect("every tenant is listed");
        assert_eq!(row["node"], format!("127.0.0.1:{}", cluster.worker_port(placed.worker)), "{row}");
        // Its 10 events and the warm-up's.
        let events = run.rows_on_worker(placed.worker, "messaging_event_receipts", placed.tenant);
        assert!(events >= 10 + run.servers.len(), "{events}");
        let events = i64::try_from(events).unwrap();
        assert_eq!(
            (row["events_last_hour"].as_i64(), row["events_last_day"].as_i64()),
            (Some(events), Some(events)),
            "{row}"
        );
    }

    // On every worker, in every shard of the three tables: acting for one tenant, the server's
    // role reads only that tenant's rows, and cannot write another's.
    let [a, b] = [&run.placed[0], &run.placed[1]];
    for w in 0..WORKERS {
        for table in doorman_adapters::postgres::citus::DISTRIBUTED {
            for shard in run.cluster.shards_on(w, table) {
                let as_app = |tenant: &str, sql: &str| {
                    run.cluster.worker_sql(
                        w,
                        &format!(
                            "BEGIN; SET LOCAL ROLE doorman_app; SET LOCAL app.tenant_id = '{tenant}'; {sql}"
                        ),
                    )
                };
                let visible = as_app(
                    &a.tenant.to_string(),
                    &format!("SELECT count(*) FROM {shard} WHERE tenant_id <> '{}'", a.tenant),
                );
                assert_eq!(
                    visible.as_deref(),
                    Some("0"),
                    "{shard} on worker {w} shows another tenant's rows"
                );
                let unnamed = as_app("", &format!("SELECT count(*) FROM {shard}"));
                assert_eq!(unnamed.as_deref(), Some("0"), "{shard} on worker {w} shows rows to no tenant");
            }
        }
        let shard = run.cluster.shards_on(w, "messaging_event_receipts").remove(0);
        let written = run.cluster.worker_sql(
            w,
            &format!(
                "BEGIN; SET LOCAL ROLE doorman_app; SET LOCAL app.tenant_id = '{}'; \
                 INSERT INTO {shard} (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at) \
                 VALUES ('{}', 'slack', 'EvForeign', gen_random_uuid(), 'message', 1, now()) RETURNING 1",
                a.tenant, b.tenant
            ),
        );
        assert_eq!(written, None, "worker {w}'s shard took a row for another tenant");
    }
    // Through the coordinator, logged in as the servers are: one tenant's rows from both
    // workers. (psql prints doorman_set_local's answer first: the statement's is the last line.)
    let through = |tenant: TenantId, sql: &str| {
        run.cluster
            .coordinator_sql_as(
                SERVER_ROLE,
                &format!("BEGIN; SELECT doorman_set_local('app.tenant_id', '{tenant}'); {sql}"),
            )
            .ok()
            .and_then(|out| out.lines().last().map(str::to_owned))
    };
    let own = run.rows_on_worker(a.worker, "messaging_event_receipts", a.tenant).to_string();
    assert_eq!(
        through(a.tenant, "SELECT count(*) FROM messaging_event_receipts"),
        Some(own),
        "its own, all of them"
    );
    assert_eq!(
        through(
            a.tenant,
            &format!("SELECT count(*) FROM messaging_event_receipts WHERE tenant_id = '{}'", b.tenant)
        )
        .as_deref(),
        Some("0")
    );
    assert_eq!(
        through(
            a.tenant,
            &format!(
                "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at) \
                 VALUES ('{}', 'slack', 'EvForeign', gen_random_uuid(), 'message', 1, now()) RETURNING 1",
                b.tenant
            )
        ),
        None,
        "the coordinator forwarded a write for another tenant"
    );
}

/// The group roles may not log in on any node (anyone who could log in to a worker as
/// doorman_app could name any tenant there): the processes log in as roles of their own that
/// inherit them, which Citus uses to reach the workers, and a login that would take its role
/// with SET ROLE (so Citus would log in as the group role) is refused at start, saying why.
/// The SQL defined once on Citus (ADR 23): after `doorman migrate` the coordinator holds exactly
/// the functions, triggers and policies of `postgres/sql/`, in their Citus form where a file has
/// one and in the plain form elsewhere, so the two differ only where a `.citus.sql` says why. A
/// cluster the previous release distributed (the receipts' policies in the Citus form, with no
/// stamp) is brought to the files by one more `doorman migrate`, and one more changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_every_function_trigger_and_policy_comes_from_its_one_file_in_its_citus_form() {
    let cluster = tokio::task::spawn_blocking(CitusCluster::start).await.unwrap();
    cluster.migrate().await;
    let url = cluster.url("postgres");
    let differences = doorman_testkit::definitions::differences(&url, Form::Citus).await;
    assert!(
        differences.is_empty(),
        "the coordinator and postgres/sql/ disagree:\n{}",
        differences.join("\n")
    );

    // Against the plain forms, exactly what has a Citus form differs.
    let mut differ: Vec<String> = doorman_testkit::definitions::differences(&url, Form::Plain)
        .await
        .iter()
        .map(|line| {
            assert!(line.contains("defined otherwise than its file says"), "{line}");
            let words: Vec<&str> = line.split_whitespace().collect();
            // "function <name> on public: …" / "policy <name> on <table>: …"
            if words[0] == "policy" { words[3].trim_end_matches(':').to_owned() } else { words[1].to_owned() }
        })
        .collect();
    differ.sort();
    differ.dedup();
    let mut with_citus_form: Vec<String> =
        DEFINITIONS.iter().filter(|d| d.citus.is_some()).map(|d| d.name.to_owned()).collect();
    with_citus_form.sort();
    assert_eq!(
        differ, with_citus_form,
        "the Citus forms differ from the plain ones where, and only where, a file says why"
    );

    // A cluster the previous release distributed: policies in the Citus form, not stamped.
    for table in doorman_adapters::postgres::citus::DISTRIBUTED {
        cluster
            .coordinator_sql(&format!("COMMENT ON POLICY tenant_isolation ON {table} IS NULL"))
            .expect("the stamp removed");
    }
    assert_eq!(
        doorman_testkit::definitions::differences(&url, Form::Citus).await.len(),
        doorman_adapters::postgres::citus::DISTRIBUTED.len()
    );
    ok(&doorman(&url, &["migrate"]));
    let differences = doorman_testkit::definitions::differences(&url, Form::Citus).await;
    assert!(differences.is_empty(), "after migrating the earlier cluster:\n{}", differences.join("\n"));
    let distributed = cluster.coordinator_sql("SELECT count(*) FROM pg_dist_partition");
    let tables = doorman_adapters::postgres::citus::DISTRIBUTED.len().to_string();
    assert_eq!(distributed.as_deref(), Some(tables.as_str()));
    let before = cluster.coordinator_sql(
        "SELECT string_agg(oid::text || obj_description(oid, 'pg_policy'), ',' ORDER BY oid) FROM pg_policy",
    );
    ok(&doorman(&url, &["migrate"]));
    let after = cluster.coordinator_sql(
        "SELECT string_agg(oid::text || obj_description(oid, 'pg_policy'), ',' ORDER BY oid) FROM pg_policy",
    );
    assert_eq!(before, after, "a stamped policy is not created again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_the_group_roles_log_in_nowhere_and_a_login_that_would_need_them_to_is_refused() {
    let cluster = tokio::task::spawn_blocking(CitusCluster::start).await.unwrap();
    cluster.migrate().await;
    let logins = "SELECT string_agg(rolname || '=' || rolcanlogin, ',' ORDER BY rolname) FROM pg_roles \
                  WHERE rolname IN ('doorman_app', 'doorman_admin')";
    let nologin = Some("doorman_admin=false,doorman_app=false".to_owned());
    assert_eq!(cluster.coordinator_sql(logins), nologin, "on the coordinator");
    for w in 0..WORKERS {
        assert_eq!(cluster.worker_sql(w, logins), nologin, "on worker {w}");
        for group in ["doorman_app", "doorman_admin"] {
            let refused = cluster.worker_sql_as(w, group, "SELECT 1").expect_err("a group role logged in");
            assert!(refused.contains("not permitted to log in"), "{refused}");
        }
    }
    // The tests' logins inherit their roles: each reaches the workers as itself.
    for login in [SERVER_ROLE, ADMIN_ROLE] {
        let read = cluster.coordinator_sql_as(
            login,
            "SELECT current_user || ' ' || count(*) FROM messaging_event_receipts",
        );
        assert_eq!(read, Ok(format!("{login} 0")));
    }

    // A login that takes doorman_app with SET ROLE (NOINHERIT) cannot work here: refused.
    cluster
        .coordinator_sql(
            "CREATE ROLE doorman_setrole_login LOGIN NOINHERIT; GRANT doorman_app TO doorman_setrole_login",
        )
        .expect("create a NOINHERIT login");
    let url = cluster.url("doorman_setrole_login");
    let refused = match doorman_app::slack::start(serve_config(&url, &[])).await {
        Ok(running) => {
            running.shutdown().await;
            panic!("a login that would need doorman_app to log in on the workers was not refused")
        }
        Err(error) => format!("{error:#}"),
    };
    assert!(refused.contains("on Citus the login must inherit doorman_app"), "{refused}");

    // A cluster an earlier release migrated (the group roles LOGIN): such a login still works,
    // and the process warns until the operator turns the group role's login off.
    cluster.coordinator_sql("ALTER ROLE doorman_app LOGIN").expect("as an earlier release left it");
    let checked = doorman_adapters::postgres::login::check(&url, "doorman_app").await;
    let Ok(doorman_adapters::postgres::login::Login::Ready { warnings, .. }) = checked else {
        panic!("{checked:?}")
    };
    assert!(warnings.iter().any(|w| w.contains("ALTER ROLE doorman_app NOLOGIN")), "{warnings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_pause_and_agent_changes_reach_both_servers_by_their_notices() {
    let run = Run::start().await;
    let placed = &run.placed[1];
    // A pause: heard by both servers, each answers 503 from then on.
    let before = run.notices().await;
    run.operator.pause(placed.tenant, true).await.expect("pause");
    run.wait_for_notices_since(before, "pause").await;
    for (i, base) in run.bases().iter().enumerate() {
        assert_eq!(
            post(&run.http, base, &placed.team, &format!("EvPaused{i}"), 0).await,
            Some(503),
            "{base}"
        );
    }

    // A new agent, then the resume: from their notices on, both servers deliver to the new one.
    let second = FakeAgent::start(AGENT_SECRET);
    let before = run.notices().await;
    run.operator.set_agent(placed.tenant, second.url(), AGENT_SECRET).await.expect("set the agent");
    run.wait_for_notices_since(before, "agent change").await;
    let before = run.notices().await;
    run.operator.pause(placed.tenant, false).await.expect("resume");
    run.wait_for_notices_since(before, "resume").await;
    for (i, base) in run.bases().iter().enumerate() {
        let id = format!("EvMoved{i}");
        assert_eq!(post(&run.http, base, &placed.team, &id, 0).await, Some(200), "{base}");
        run.quiesce().await;
        assert_eq!(
            (second.count_for(&id), run.agent.count_for(&id)),
            (1, 0),
            "{base} sent {id} to the old agent"
        );
    }
}

/// Two tenants whose shards share a worker, and one on the other worker, all keeping payloads:
/// written on their workers, several tenants in a node's batch (ADR 24).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_tenants_sharing_a_worker_are_written_there_once_each_and_their_payloads_released() {
    tenants_sharing_a_worker("node").await;
}

/// The same with `DOORMAN_CITUS_WRITES=coordinator`: through the coordinator's batch functions
/// (their Citus forms), none of it sent to a worker directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_writes_through_the_coordinator_when_told_to_and_nothing_goes_to_a_worker_directly() {
    tenants_sharing_a_worker("coordinator").await;
}

async fn tenants_sharing_a_worker(writes: &str) {
    let run = Run::start_with(2, &["--citus-writes", writes]).await;
    let shared = run.placed[0].worker;
    let mut tenants: Vec<Placed> = run.placed.clone();
    for n in 0.. {
        assert!(n < 40, "no second tenant landed on worker {shared} after {n} tries");
        let team = format!("TS{n}");
        let tenant = tenant_with_agent(&run.operator, &team, run.agent.url(), AGENT_SECRET).await;
        if run.cluster.worker_of(tenant) == shared {
            tenants.push(Placed { team, tenant, worker: shared });
            break;
        }
    }
    let owner = run.cluster.url("postgres");
    for placed in &tenants {
        ok(&doorman(&owner, &["tenant", "retain-payloads", "--tenant", &placed.tenant.to_string(), "on"]));
    }
    let bases = run.bases();
    if writes == "node" {
        run.warm_up(&tenants).await;
    }
    // Every tenant's events at once, each twice, to both servers: the node's batches mix the
    // two tenants that share it.
    let mut sends = Vec::new();
    for (t, placed) in tenants.iter().enumerate() {
        for e in 0..20 {
            let id = format!("EvShare{t}x{e}");
            for copy in 0..2u32 {
                let (http, base, team, id) = (
                    run.http.clone(),
                    bases[(e + copy as usize) % 2].clone(),
                    placed.team.clone(),
                    id.clone(),
                );
                sends.push(tokio::spawn(async move { post(&http, &base, &team, &id, copy).await }));
            }
        }
    }
    for send in sends {
        assert_eq!(send.await.unwrap(), Some(200), "every copy is acknowledged: {}", run.logs());
    }
    run.quiesce().await;
    for (t, placed) in tenants.iter().enumerate() {
        for e in 0..20 {
            let id = format!("EvShare{t}x{e}");
            assert_eq!(run.agent.count_for(&id), 1, "{id} dispatched once: {}", run.logs());
        }
        let shared = "external_event_id LIKE 'EvShare%'";
        assert_eq!(
            run.rows_on_worker_where(placed.worker, "messaging_event_receipts", placed.tenant, shared),
            20
        );
        assert_eq!(
            run.rows_on_worker(placed.worker, "messaging_event_payloads", placed.tenant),
            0,
            "a handled event's kept payload is released ({writes})"
        );
    }
    let unhandled =
        run.cluster.coordinator_sql("SELECT count(*) FROM messaging_event_receipts WHERE handled_at IS NULL");
    assert_eq!(unhandled.as_deref(), Some("0"), "every receipt is marked handled ({writes})");

    let cluster = &run.cluster;
    let on_workers =
        |pattern: &str| -> u64 { (0..WORKERS).map(|w| cluster.calls_of(Some(w), pattern)).sum() };
    // What only Doorman's node writers send a worker (Citus forwards a statement from the
    // coordinator in a shard's name, never as a distributed table's, and never holds a shard
    // this way).
    let held = on_workers(HOLDS);
    let routed =
        on_workers(DISTRIBUTED_CLAIMS) + on_workers("INSERT INTO public.messaging_event_payloads AS p%");
    let claims_through = cluster.calls_of(None, "SELECT %FROM doorman_claim_receipts(%");
    let outcomes_through = cluster.calls_of(None, "SELECT %FROM doorman_record_outcomes(%");
    match writes {
        // On the workers directly, in the shards' tables, payloads included (so their release
        // above means something), and nothing through the coordinator's functions.
        "node" => {
            let (claims, payloads) = (on_workers(SHARD_CLAIMS), on_workers(SHARD_PAYLOADS));
            assert!(
                held > 0 && claims > 0 && payloads > 0 && routed == 0,
                "{held} holds, {claims} claim and {payloads} payload statements in shards, {routed} routed: {}",
                run.logs()
            );
            assert_eq!((claims_through, outcomes_through), (0, 0), "through the coordinator: {}", run.logs());
        }
        // Through the coordinator's functions only.
        _ => {
            assert_eq!((held, routed), (0, 0), "statements sent to the workers directly");
            assert!(
                claims_through > 0 && outcomes_through > 0,
                "{claims_through} claim and {outcomes_through} outcome calls"
            );
        }
    }
}

/// Over the admin API on the coordinator: each tenant's failures listed (its own only),
/// replayed once as a job, unreadable (503) only while its own worker is down; then pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_failed_events_are_listed_replayed_once_and_pruned_after_the_retention() {
    let run = Run::start().await;
    let owner = run.cluster.url("postgres");
    for placed in &run.placed {
        ok(&doorman(&owner, &["tenant", "retain-payloads", "--tenant", &placed.tenant.to_string(), "on"]));
    }
    run.agent.answer_with(500);
    for placed in &run.placed {
        for e in 0..3 {
            let id = format!("EvFail{}x{e}", placed.worker);
            assert_eq!(post(&run.http, &run.bases()[e % 2], &placed.team, &id, 0).await, Some(200));
        }
    }
    run.quiesce().await;
    run.agent.answer_with(200);

    let admin =
        run.admin_api("citus", KeyScope { tenant: None, read_only: false, read_payloads: false }).await;
    let call = |method: reqwest::Method, path: String| admin.call(method, path, None);
    for placed in &run.placed {
        let t = placed.tenant;
        let (status, failed) =
            call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}/events?state=failed")).await;
        assert_eq!(status, 200, "{failed}");
        let mut ids: Vec<&str> = failed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["external_event_id"].as_str().unwrap())
            .collect();
        ids.sort_unstable();
        let expected: Vec<String> = (0..3).map(|e| format!("EvFail{}x{e}", placed.worker)).collect();
        assert_eq!(ids, expected, "tenant on worker {} lists its own failures only", placed.worker);

        let id = format!("EvFail{}x0", placed.worker);
        let replayed = replay_job(&call, t, &id).await;
        assert_eq!(replayed["events"][0]["outcome"].as_str(), Some("handled"), "{replayed}");
        let (status, shown) = call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}/events/{id}")).await;
        assert_eq!((status, shown["status"].as_str()), (200, Some("handled")), "{shown}");
        // Both attempts on record: the live one's (written on the tenant's worker by the
        // server's node writer) with what the agent answered, the replay's (through the
        // coordinator by the admin process).
        let attempts: Vec<(&str, Option<u64>, Option<&str>)> = shown["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["kind"].as_str().unwrap(), a["status"].as_u64(), a["answer"].as_str()))
            .collect();
        assert_eq!(
            attempts,
            [("live", Some(500), Some(r#"{"error":"the agent answered 500"}"#)), ("replay", Some(200), None)],
            "{shown}"
        );
        // (The agent counts what it accepted: the live dispatch it answered 500 is not among them.)
        assert_eq!(run.agent.count_for(&id), 1, "the one replay");
        let again = replay_job(&call, t, &id).await;
        assert_eq!(again["events"][0]["outcome"].as_str(), Some("already_handled"), "{again}");
        assert_eq!(run.agent.count_for(&id), 1, "a handled event is not replayed again");
    }

    // A worker down: its tenant's events cannot be read, and the admin API says so as the
    // server does for deliveries (503 unavailable, nothing else to tell); the other worker's
    // tenant's events still can be.
    let (lost, kept) = (run.placed[1].clone(), run.placed[0].clone());
    let cluster = Arc::clone(&run.cluster);
    tokio::task::spawn_blocking(move || cluster.stop_worker(lost.worker)).await.unwrap();
    let event_of =
        |placed: &Placed| format!("/admin/v1/tenants/{}/events/EvFail{}x2", placed.tenant, placed.worker);
    let (status, answer) = call(reqwest::Method::GET, event_of(&lost)).await;
    assert_eq!(
        (status, answer["type"].as_str()),
        (503, Some("urn:doorman:problem:unavailable")),
        "the lost worker's tenant: {answer}"
    );
    let (status, answer) = call(reqwest::Method::GET, event_of(&kept)).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (200, Some("failed")),
        "the other worker's tenant: {answer}"
    );
    let listed = format!("/admin/v1/tenants/{}/events?state=failed", kept.tenant);
    let (status, answer) = call(reqwest::Method::GET, listed).await;
    assert_eq!(status, 200, "the other worker's tenant's failures: {answer}");
    // (Its first failure was replayed above: handled now.)
    assert_eq!(answer["items"].as_array().map(Vec::len), Some(2), "{answer}");
    let cluster = Arc::clone(&run.cluster);
    tokio::task::spawn_blocking(move || cluster.start_worker(lost.worker)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, answer) = call(reqwest::Method::GET, event_of(&lost)).await;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the lost worker's tenant still unreadable once it is back: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Everything but one event per tenant claimed eight days ago: prune takes exactly those.
    run.cluster
        .coordinator_sql_as(
            "postgres",
            "UPDATE messaging_event_receipts SET claimed_at = now() - interval '8 days' WHERE external_event_id NOT LIKE '%x2'; \
             UPDATE messaging_event_payloads SET claimed_at = now() - interval '8 days' WHERE external_event_id NOT LIKE '%x2'; \
             UPDATE messaging_event_attempts SET started_at = now() - interval '8 days 1 second', \
                    ended_at = now() - interval '8 days' WHERE NOT replay AND external_event_id NOT LIKE '%x2'; \
             UPDATE messaging_event_attempts SET started_at = now() - interval '8 days', \
                    ended_at = now() - interval '8 days' WHERE replay AND external_event_id NOT LIKE '%x2'",
        )
        .expect("age the receipts, their payloads and attempts");
    let pruned: Value =
        serde_json::from_str(&ok(&doorman(&owner, &["receipts", "prune", "--json"]))).unwrap();
    assert_eq!(pruned["deleted"], 4, "{pruned}");
    let left = run.cluster.coordinator_sql(
        "SELECT string_agg(external_event_id, ',' ORDER BY external_event_id) FROM messaging_event_receipts",
    );
    assert_eq!(left.as_deref(), Some("EvFail0x2,EvFail1x2"));
    let attempts_left = run.cluster.coordinator_sql(
        "SELECT string_agg(external_event_id, ',' ORDER BY external_event_id) FROM messaging_event_attempts",
    );
    assert_eq!(attempts_left.as_deref(), Some("EvFail0x2,EvFail1x2"), "attempts expire with their receipts");
}

/// A read never writes, on the cluster too: a read-only key scoped to one tenant lists its
/// events in every state, opens each, and dry-runs a replay of its stranded ones, and no row
/// of any table changes (a sweep on read would mark every tenant's receipts, on every worker,
/// in a two-phase commit). The stranded are still all found (those the last sweep marked and
/// those stranded since), and with the other tenant's worker down, this tenant's still are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_a_read_only_listing_of_every_state_changes_no_row_and_needs_only_its_worker() {
    let run = Run::start_with_servers(0).await;
    let (a, b) = (run.placed[0].clone(), run.placed[1].clone());
    let receipt = |placed: &Placed, id: &str, minutes: u32, outcome: &str| {
        format!(
            "('{}', 'slack', '{id}', 'message', 0, now() - interval '{minutes} minutes', {outcome})",
            placed.tenant
        )
    };
    let (none, handled, failed) =
        ("NULL, NULL, NULL, NULL", "now(), NULL, NULL, NULL", "NULL, 'agent answered HTTP 500', now(), NULL");
    let swept = "NULL, NULL, NULL, now() - interval '35 minutes'";
    let rows = [
        receipt(&a, "EvHandled", 25, handled),
        receipt(&a, "EvFailed", 25, failed),
        receipt(&a, "EvInFlight", 0, none),
        receipt(&a, "EvSwept", 40, swept),
        receipt(&a, "EvStrandedSince", 20, none),
        receipt(&b, "EvStrandedB", 20, none),
    ];
    run.cluster
        .coordinator_sql(&format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, \
             delivery_attempt, claimed_at, handled_at, failure_reason, failed_at, swept_at) VALUES {}; \
             UPDATE messaging_receipt_sweep SET swept_before = now() - interval '30 minutes'",
            rows.join(", ")
        ))
        .expect("seed receipts in every state, and the sweep's watermark");

    let admin = run
        .admin_api("reader", KeyScope { tenant: Some(a.tenant), read_only: true, read_payloads: false })
        .await;
    let call = |method: reqwest::Method, path: String, body: Option<Value>| admin.call(method, path, body);
    let t = a.tenant;
    // The key's use is recorded (at most once a minute): the one write a request makes. Its
    // record is put a day ahead, so however long the listings below take, no use of this key
    // is due to be recorded and every row must stay as it is.
    assert_eq!(call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}"), None).await.0, 200);
    run.cluster
        .coordinator_sql("UPDATE admin_keys SET last_used_at = now() + interval '1 day'")
        .expect("the key's use recorded ahead");
    let every_row = || run.cluster.coordinator_sql(doorman_testkit::database::EVERY_ROW).expect("every row");
    let before = every_row();
    assert!(before.contains("EvStrandedB"), "the dump reads the workers' shards: {before}");

    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["external_event_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut listed = Vec::new();
    for state in ["handled", "failed", "in_flight", "stranded"] {
        let (status, page) =
            call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}/events?state={state}"), None).await;
        assert_eq!(status, 200, "{state}: {page}");
        for id in ids(&page) {
            let (status, shown) =
                call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}/events/{id}"), None).await;
            assert_eq!((status, shown["status"].as_str()), (200, Some(state)), "{shown}");
        }
        listed.push(ids(&page));
    }
    let (status, dry_run) = call(
        reqwest::Method::POST,
        format!("/admin/v1/tenants/{t}/replays"),
        Some(serde_json::json!({"stranded": true, "dry_run": true})),
    )
    .await;
    assert_eq!(status, 200, "{dry_run}");
    // The operator's placement report reads every worker's receipts too, and writes nothing.
    let placement = doorman(&run.cluster.url("postgres"), &["receipts", "placement", "--json"]);
    ok(&placement);
    let after = every_row();
    assert!(before == after, "a read changed rows:\nbefore {before}\nafter  {after}");

    assert_eq!(
        listed,
        [vec!["EvHandled"], vec!["EvFailed"], vec!["EvInFlight"], vec!["EvSwept", "EvStrandedSince"]]
    );
    let selected: Vec<&str> = dry_run["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["external_event_id"].as_str().unwrap())
        .collect();
    assert_eq!(selected, ["EvSwept", "EvStrandedSince"], "{dry_run}");

    // The other tenant's worker lost: this tenant's stranded listing reads its own worker only.
    let cluster = Arc::clone(&run.cluster);
    tokio::task::spawn_blocking(move || cluster.stop_worker(b.worker)).await.unwrap();
    let (status, page) =
        call(reqwest::Method::GET, format!("/admin/v1/tenants/{t}/events?state=stranded"), None).await;
    assert_eq!(
        (status, ids(&page)),
        (200, vec!["EvSwept".to_owned(), "EvStrandedSince".to_owned()]),
        "{page}"
    );
}

/// Support's search by event id on Citus: two tenants on different workers with the same id
/// are both found by a key for every tenant (the query pruned to their shards, each probing
/// its primary key); a scoped key finds its own, and with the other tenant's worker down its
/// search still answers: `tenant_id = ANY(…)` of one tenant is routed to its worker alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_an_event_id_is_found_on_every_tenants_worker_and_a_scoped_search_needs_only_its_own() {
    let run = Run::start_with_servers(0).await;
    let (a, b) = (run.placed[0].clone(), run.placed[1].clone());
    assert_ne!(a.worker, b.worker, "the two tenants are on different workers");
    let rows: Vec<String> = [&a, &b]
        .iter()
        .map(|p| format!("('{}', 'slack', 'EvSame', 'message', 0, now())", p.tenant))
        .collect();
    run.cluster
        .coordinator_sql(&format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, \
             delivery_attempt, claimed_at) VALUES {}",
            rows.join(", ")
        ))
        .expect("the same id in both tenants");
    let tenants_of = |found: &Value| -> Vec<String> {
        let mut ids: Vec<String> = found["items"]
            .as_array()
            .unwrap_or_else(|| panic!("items in {found}"))
            .iter()
            .map(|i| i["tenant_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let search = "/admin/v1/events?event_id=EvSame".to_owned();
    let support =
        run.admin_api("support", KeyScope { tenant: None, read_only: true, read_payloads: false }).await;
    let (status, found) = support.call(reqwest::Method::GET, search.clone(), None).await;
    assert_eq!(status, 200, "{found}");
    let mut both = vec![a.tenant.to_string(), b.tenant.to_string()];
    both.sort();
    assert_eq!(tenants_of(&found), both);
    let portal = run
        .admin_api("portal", KeyScope { tenant: Some(a.tenant), read_only: true, read_payloads: false })
        .await;
    let (status, own) = portal.call(reqwest::Method::GET, search.clone(), None).await;
    assert_eq!((status, tenants_of(&own)), (200, vec![a.tenant.to_string()]), "{own}");

    let cluster = Arc::clone(&run.cluster);
    tokio::task::spawn_blocking(move || cluster.stop_worker(b.worker)).await.unwrap();
    let (status, own) = portal.call(reqwest::Method::GET, search, None).await;
    assert_eq!((status, tenants_of(&own)), (200, vec![a.tenant.to_string()]), "{own}");
}

/// The overview's stranded events on Citus: the receipts the sweep marked, counted by tenant on
/// each tenant's worker (grouped by the distribution column) and ranked on the coordinator, for
/// a key for every tenant; a failed receipt and one stranded since the sweep are not counted
/// (the tenant's list has the latter already), and reading changes no row on any node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_the_overview_counts_the_stranded_receipts_on_each_tenants_worker_and_changes_no_row() {
    let run = Run::start_with_servers(0).await;
    let (a, b) = (run.placed[0].clone(), run.placed[1].clone());
    assert_ne!(a.worker, b.worker, "the two tenants are on different workers");
    let receipt = |placed: &Placed, id: &str, minutes: u32, failure: &str| {
        format!(
            "('{}', 'slack', '{id}', 'message', 0, now() - interval '{minutes} minutes', {failure})",
            placed.tenant
        )
    };
    let (none, failed) = ("NULL, NULL", "'agent answered HTTP 500', now()");
    let rows = [
        receipt(&a, "EvA1", 40, none),
        receipt(&a, "EvA2", 40, none),
        receipt(&a, "EvAFailed", 40, failed),
        receipt(&b, "EvB1", 40, none),
        receipt(&b, "EvBFailed", 40, failed),
    ];
    let insert = |rows: &[String]| {
        format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, \
             delivery_attempt, claimed_at, failure_reason, failed_at) VALUES {}",
            rows.join(", ")
        )
    };
    // The sweep as the serving processes' gauges run it, half an hour back; then one stranded since.
    run.cluster
        .coordinator_sql(&format!(
            "{}; SELECT doorman_sweep_receipts(now() - interval '30 minutes')",
            insert(&rows)
        ))
        .expect("receipts on both workers, swept");
    run.cluster.coordinator_sql(&insert(&[receipt(&b, "EvBSince", 20, none)])).expect("stranded since");

    let support =
        run.admin_api("support", KeyScope { tenant: None, read_only: true, read_payloads: false }).await;
    let call = |path: &str| support.call(reqwest::Method::GET, path.to_owned(), None);
    // The key's use is recorded once (the one write a request makes), then put a day ahead.
    assert_eq!(call("/admin/v1/tenants").await.0, 200);
    run.cluster
        .coordinator_sql("UPDATE admin_keys SET last_used_at = now() + interval '1 day'")
        .expect("the key's use recorded ahead");
    let every_row = || run.cluster.coordinator_sql(doorman_testkit::database::EVERY_ROW).expect("every row");
    let before = every_row();

    let (status, overview) = call("/admin/v1/overview").await;
    assert_eq!(status, 200, "{overview}");
    let counted: Vec<(String, u64)> = overview["stranded_most"]
        .as_array()
        .unwrap_or_else(|| panic!("stranded_most in {overview}"))
        .iter()
        .map(|t| (t["tenant_id"].as_str().unwrap().to_owned(), t["stranded"].as_u64().unwrap()))
        .collect();
    assert_eq!(counted, [(a.tenant.to_string(), 2), (b.tenant.to_string(), 1)], "{overview}");
    let (status, listed) = call(&format!("/admin/v1/tenants/{}/events?state=stranded", b.tenant)).await;
    assert_eq!((status, listed["items"].as_array().map(Vec::len)), (200, Some(2)), "{listed}");
    assert!(before == every_row(), "a read changed rows");
}

/// Offboarding on Citus: what a tenant leaves in the distributed tables (its receipts, the
/// kept payload of an event whose dispatch failed, a slash command's fingerprint) is on its
/// worker's shards; deleted over the admin API, nothing of it is left on any worker, and the
/// other tenant's rows are where they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_a_deleted_tenant_leaves_nothing_on_any_workers_shards() {
    let run = Run::start().await;
    let owner = run.cluster.url("postgres");
    run.agent.answer_with(500);
    for placed in &run.placed {
        ok(&doorman(&owner, &["tenant", "retain-payloads", "--tenant", &placed.tenant.to_string(), "on"]));
        let id = format!("EvGone{}", placed.worker);
        assert_eq!(post(&run.http, &run.bases()[0], &placed.team, &id, 0).await, Some(200));
        assert_eq!(post_command(&run.http, &run.bases()[1], &placed.team).await, 200);
    }
    run.quiesce().await;
    run.agent.answer_with(200);
    for placed in &run.placed {
        for table in doorman_adapters::postgres::citus::DISTRIBUTED {
            assert_eq!(
                run.rows_on_worker(placed.worker, table, placed.tenant),
                1,
                "{table}: the tenant's row is on its worker"
            );
        }
    }

    let (gone, kept) = (&run.placed[0], &run.placed[1]);
    let admin =
        run.admin_api("offboarding", KeyScope { tenant: None, read_only: false, read_payloads: false }).await;
    let (status, deleted) =
        admin.call(reqwest::Method::DELETE, format!("/admin/v1/tenants/{}", gone.tenant), None).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        (deleted["receipts_deleted"].as_u64(), deleted["receipts_left"].as_bool()),
        (Some(1), Some(false)),
        "{deleted}"
    );
    for w in 0..WORKERS {
        for table in doorman_adapters::postgres::citus::DISTRIBUTED {
            assert_eq!(
                run.rows_on_worker(w, table, gone.tenant),
                0,
                "{table} on worker {w} keeps the deleted tenant's rows"
            );
        }
    }
    for table in doorman_adapters::postgres::citus::DISTRIBUTED {
        assert_eq!(
            run.rows_on_worker(kept.worker, table, kept.tenant),
            1,
            "{table}: the other tenant's row stays"
        );
    }
}

/// Replays one event over the admin API (202 and a job), then reads the job until it has
/// finished.
async fn replay_job<F, Fut>(call: &F, tenant: TenantId, event: &str) -> Value
where
    F: Fn(reqwest::Method, String) -> Fut,
    Fut: std::future::Future<Output = (u16, Value)>,
{
    let (status, job) =
        call(reqwest::Method::POST, format!("/admin/v1/tenants/{tenant}/events/{event}/replay")).await;
    assert_eq!(status, 202, "{job}");
    let path = format!("/admin/v1/tenants/{tenant}/replays/{}", job["id"].as_str().unwrap());
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, job) = call(reqwest::Method::GET, path.clone()).await;
        assert_eq!(status, 200, "{job}");
        if job["state"] == "finished" {
            return job;
        }
        assert!(Instant::now() < deadline, "the replay job never finished: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Concurrent senders per team, as many connections as Slack might hold open for a workspace.
const SENDERS: usize = 8;
/// Events answered (both teams together) before the worker is lost; the outage lasts
/// `OUTAGE`; the load goes on for `AFTER` once the worker is back.
const BEFORE: usize = 200;
const OUTAGE: Duration = Duration::from_millis(1500);
const AFTER: Duration = Duration::from_secs(1);
/// How long the servers may take to finish what the outage left open (see
/// [`Run::quiesce_after_outage`]).
const AFTER_OUTAGE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_a_citus_worker_mid_load_costs_only_its_tenants_and_loses_or_doubles_nothing() {
    let run = Run::start().await;
    let (kept, lost) = (run.placed[0].clone(), run.placed[1].clone());
    let load = Arc::new(Load::new(run.http.clone(), run.bases(), vec![kept.team.clone(), lost.team.clone()]));
    // Each team has its own senders, each sending new events until told to stop: a sender
    // re-sending the lost tenant's event until its worker is back does not hold up the other
    // tenant's, and both tenants are sending for the whole outage.
    let senders: Vec<_> = (0..SENDERS * 2).map(|k| tokio::spawn(load.clone().send(k % 2))).collect();
    while load.answered.load(Ordering::SeqCst) < BEFORE {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stopping = load.started.elapsed();
    let cluster = run.cluster.clone();
    tokio::task::spawn_blocking(move || cluster.stop_worker(lost.worker)).await.unwrap();
    let stopped = load.started.elapsed();
    tokio::time::sleep(OUTAGE).await;
    // The worker accepts connections a moment before `pg_ctl start` returns: the outage ends
    // when it is asked to start.
    let restarting = load.started.elapsed();
    let cluster = run.cluster.clone();
    tokio::task::spawn_blocking(move || cluster.start_worker(lost.worker)).await.unwrap();
    tokio::time::sleep(AFTER).await;
    load.stop.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.await.unwrap();
    }
    let prepared = run.prepared_transactions();
    let settling = run.quiesce_after_outage().await;

    let sent = load.sent.lock().unwrap();
    // Sent once the worker was down, answered before it was asked to start again.
    let during: Vec<&Sent> =
        sent.iter().filter(|s| s.at >= stopped && s.at + s.waited <= restarting).collect();
    let answered = |team: &str, ok: bool| {
        during.iter().filter(|s| s.team == team && (s.status == Some(200)) == ok).collect::<Vec<_>>()
    };
    let (kept_ok, kept_refused) = (answered(&kept.team, true).len(), answered(&kept.team, false));
    let kept_refused: Vec<(&str, Option<u16>, Duration)> =
        kept_refused.iter().map(|s| (s.id.as_str(), s.status, s.waited)).collect();
    let lost_ok = answered(&lost.team, true).len();
    let lost_503 = during.iter().filter(|s| s.team == lost.team && s.status == Some(503)).count();
    let lost_other: Vec<(Option<u16>, Duration)> = during
        .iter()
        .filter(|s| s.team == lost.team && !matches!(s.status, Some(200 | 503)))
        .map(|s| (s.status, s.waited))
        .collect();
    // The other worker's tenant's pace (answered 200 per second) before the stop and during the outage.
    let kept_before = sent
        .iter()
        .filter(|s| s.team == kept.team && s.status == Some(200) && s.at + s.waited < stopping)
        .count();
    let pace = |n: usize, over: Duration| n as f64 / over.as_secs_f64().max(0.001);
    let (pace_before, pace_during) =
        (pace(kept_before, stopping), pace(kept_ok, restarting.saturating_sub(stopped)));
    let delivered = load.delivered.lock().unwrap();
    let per_team = |team: &str| delivered.iter().filter(|(t, _)| t == team).count();
    let receipts = run.receipts_per_event();
    let lost_events: Vec<&String> =
        delivered.iter().map(|(_, id)| id).filter(|id| receipts.get(id.as_str()) != Some(&1)).collect();
    let doubled: Vec<&String> =
        delivered.iter().map(|(_, id)| id).filter(|id| run.agent.count_for(id) > 1).collect();
    let undelivered: Vec<&String> =
        delivered.iter().map(|(_, id)| id).filter(|id| run.agent.count_for(id) == 0).collect();
    // Every POST the agent read whole, whatever it answered, by `webhook-id`.
    let posts = PostsById::of(&run.agent, delivered.iter().map(|(_, id)| id.as_str()));
    let unhandled = run
        .cluster
        .coordinator_sql("SELECT count(*) FROM messaging_event_receipts WHERE handled_at IS NULL")
        .unwrap_or_default();
    // The path where one event has two deliveries that could each dispatch it: a claim whose
    // commit was not confirmed (answered 503, settled after the answer) and Slack's re-send.
    let logs = run.logs();
    let count = |line: &str| logs.matches(line).count();
    eprintln!(
        "{posts} ({} badly signed); {} claims answered unconfirmed, {} of them dispatched by the job that settled them",
        run.agent.bad_signatures(),
        count("claim not confirmed; answered 503"),
        count("an unconfirmed claim holds the event; dispatching it"),
    );
    eprintln!(
        "citus worker lost for {} ms: the other worker's tenant answered {kept_ok} deliveries 200 and {} otherwise \
         ({pace_during:.0}/s, {pace_before:.0}/s before the stop); \
         the lost worker's tenant {lost_503} answered 503, {lost_ok} 200, {lost_other:?} otherwise; \
         {} events answered 200 in all ({} and {}), lost {}, doubled {}, undelivered {}, receipts not handled {unhandled}; \
         prepared transactions left on the workers when the load ended {prepared:?}, \
         dispatches all finished {} ms after it",
        (restarting - stopped).as_millis(),
        kept_refused.len(),
        delivered.len(),
        per_team(&kept.team),
        per_team(&lost.team),
        lost_events.len(),
        doubled.len(),
        undelivered.len(),
        settling.as_millis(),
    );
    assert!(kept_ok >= 20, "the other worker's tenant kept being served: {kept_ok} answered 200");
    assert!(
        kept_refused.is_empty(),
        "and none of its deliveries was refused: {kept_refused:?}\n{}",
        run.logs()
    );
    assert!(lost_503 > 0, "the lost worker's tenant was answered 503");
    assert_eq!(
        (lost_ok, lost_other.len()),
        (0, 0),
        "and nothing but 503 while its worker was down: {}",
        run.logs()
    );
    let served_again =
        sent.iter().filter(|s| s.team == lost.team && s.status == Some(200) && s.at >= restarting).count();
    assert!(served_again > 0, "the lost worker's tenant was served again once it was back");
    assert!(lost_events.is_empty(), "every event answered 200 has one receipt: {lost_events:?}");
    assert!(doubled.is_empty(), "no event dispatched twice: {doubled:?}");
    assert!(undelivered.is_empty(), "every event answered 200 was dispatched: {undelivered:?}");
    assert_eq!(run.agent.bad_signatures(), 0, "every POST the agent read was correctly signed");
    posts.assert_one_per_event(|event| {
        let attempts: Vec<_> =
            sent.iter().filter(|s| s.id == event).map(|s| (s.status, s.at, s.waited)).collect();
        format!("(status, at, waited) {attempts:?}")
    });
    assert_eq!(unhandled, "0", "every receipt was marked handled (none reads as stranded)");
    assert_eq!(prepared, vec![0; WORKERS], "no batch committed in two phases (each is written per node)");
}

/// One request as the load sent it.
struct Sent {
    team: String,
    id: String,
    /// Since the load started.
    at: Duration,
    waited: Duration,
    status: Option<u16>,
}

/// Signed deliveries of unique events for each team, each re-sent until answered 200 (as Slack
/// re-sends), to both servers in turn.
struct Load {
    http: reqwest::Client,
    bases: Vec<String>,
    teams: Vec<String>,
    started: Instant,
    /// The next event of each team.
    next: Vec<AtomicUsize>,
    /// Set to stop starting new events (one being sent is still sent until answered 200).
    stop: AtomicBool,
    answered: AtomicUsize,
    /// `(team, event id)` of each event answered 200.
    delivered: Mutex<Vec<(String, String)>>,
    sent: Mutex<Vec<Sent>>,
}

impl Load {
    fn new(http: reqwest::Client, bases: Vec<String>, teams: Vec<String>) -> Self {
        Self {
            next: teams.iter().map(|_| AtomicUsize::new(0)).collect(),
            http,
            bases,
            teams,
            started: Instant::now(),
            stop: AtomicBool::new(false),
            answered: AtomicUsize::new(0),
            delivered: Mutex::default(),
            sent: Mutex::default(),
        }
    }

    /// Sends team `t`'s events, one after the other, until told to stop.
    async fn send(self: Arc<Self>, t: usize) {
        while !self.stop.load(Ordering::SeqCst) {
            let i = self.next[t].fetch_add(1, Ordering::SeqCst);
            let team = &self.teams[t];
            let id = format!("EvWorker{t}x{i}");
            for attempt in 0u32.. {
                let base = &self.bases[(i + attempt as usize) % self.bases.len()];
                let at = self.started.elapsed();
                let started = Instant::now();
                let status = post(&self.http, base, team, &id, attempt).await;
                self.sent.lock().unwrap().push(Sent {
                    team: team.clone(),
                    id: id.clone(),
                    at,
                    waited: started.elapsed(),
                    status,
                });
                if status == Some(200) {
                    break;
                }
                assert!(attempt < 1000, "{id} was never answered 200");
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            self.delivered.lock().unwrap().push((team.clone(), id));
            self.answered.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_an_agent_down_then_back_gets_every_acknowledged_event_of_tenants_with_redelivery_on_each_worker()
 {
    let flags = [
        "--dispatch-timeout",
        "2s",
        "--redelivery-hold",
        "5s",
        "--redelivery-every",
        "200ms",
        "--circuit-cooldown",
        "1s",
    ];
    let run = Run::start_with(2, &flags).await;
    for placed in &run.placed {
        run.cluster
            .coordinator_sql(&format!(
                "UPDATE tenants SET redelivery_schedule = '{{1,2,4,8,16,32,60}}' WHERE id = '{}'",
                placed.tenant
            ))
            .expect("redelivery on");
    }
    run.agent.answer_with(503);
    let mut acknowledged: Vec<String> = Vec::new();
    for n in 0..12 {
        for placed in &run.placed {
            let id = format!("EvBack{}x{n:02}", placed.worker);
            if post(&run.http, &run.bases()[n % 2], &placed.team, &id, 0).await == Some(200) {
                acknowledged.push(format!("evt_{id}"));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.agent.answer_with(200);

    let expected: std::collections::HashSet<String> = acknowledged.iter().cloned().collect();
    let taken = |agent: &FakeAgent| -> std::collections::HashSet<String> {
        agent.received().into_iter().map(|r| r.webhook_id).filter(|id| id.starts_with("evt_EvBack")).collect()
    };
    run.agent
        .wait_until("every acknowledged event taken", Duration::from_secs(120), |a| {
            expected.is_subset(&taken(a))
        })
        .await;
    // The agent may have taken an event a moment before its outcome is written.
    run.quiesce().await;
    assert_eq!(taken(&run.agent), expected, "the agent's distinct ids are the events acknowledged");
    let mut attempts = std::collections::HashMap::new();
    for arrival in run.agent.arrivals() {
        *attempts.entry((arrival.webhook_id, arrival.redelivery)).or_insert(0) += 1;
    }
    assert!(attempts.values().all(|n| *n == 1), "no attempt sent twice: {attempts:?}");
    assert!(attempts.keys().any(|(_, n)| *n > 0), "the failed events came back as redeliveries");
    for placed in &run.placed {
        let w = placed.worker;
        assert_eq!(
            run.rows_on_worker_where(
                w,
                "messaging_event_receipts",
                placed.tenant,
                "external_event_id LIKE 'EvBack%' AND handled_at IS NULL"
            ),
            0,
            "none unhandled on worker {w}"
        );
        assert!(
            run.rows_on_worker_where(w, "messaging_event_receipts", placed.tenant, "redeliveries > 0") > 0,
            "redelivered events counted on their worker {w}"
        );
    }
}

/// The activity rollup on Citus (ADR 28): it stays an ordinary table on the coordinator, and two
/// serving processes' counts of one tenant's dispatches (each flushed at its shutdown) add up
/// there; the tenant's activity, the overview, and a customer's view of its own tenant read
/// them through the admin API as on one PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_two_servers_counts_add_up_in_the_coordinators_rollup_and_each_tenant_reads_its_own() {
    let mut run = Run::start().await;
    let (a, b) = (run.placed[0].clone(), run.placed[1].clone());
    let bases = run.bases();
    run.agent.answer_with(500);
    for (n, base) in bases.iter().enumerate() {
        assert_eq!(post(&run.http, base, &a.team, &format!("EvRollFail{n}"), 0).await, Some(200));
    }
    run.quiesce().await;
    run.agent.answer_with(200);
    for n in 0..3 {
        assert_eq!(post(&run.http, &bases[n % 2], &a.team, &format!("EvRollOk{n}"), 0).await, Some(200));
    }
    assert_eq!(post(&run.http, &bases[1], &b.team, "EvRollOther", 0).await, Some(200));
    run.quiesce().await;
    // The last counts reach the rollup with each process's shutdown flush.
    for server in run.servers.drain(..) {
        assert!(server.stop(Duration::from_secs(20)).await.is_some_and(|s| s.success()), "a clean shutdown");
    }
    assert_eq!(
        run.cluster
            .coordinator_sql(
                "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'messaging_activity_hours'::regclass"
            )
            .as_deref(),
        Some("0"),
        "the rollup is not distributed"
    );

    let support =
        run.admin_api("support", KeyScope { tenant: None, read_only: true, read_payloads: false }).await;
    let (status, activity) =
        support.call(reqwest::Method::GET, format!("/admin/v1/tenants/{}/activity", a.tenant), None).await;
    assert_eq!(status, 200, "{activity}");
    assert_eq!(
        (activity["total"]["delivered"].as_u64(), activity["total"]["failed"].as_u64()),
        (Some(3), Some(2)),
        "both servers' counts: {activity}"
    );
    let (status, overview) = support.call(reqwest::Method::GET, "/admin/v1/overview".to_owned(), None).await;
    assert_eq!(status, 200, "{overview}");
    let failing = overview["failing_most"].as_array().unwrap_or_else(|| panic!("failing_most in {overview}"));
    assert_eq!(
        failing
            .iter()
            .map(|t| (t["tenant_id"].as_str().unwrap_or_default(), t["failed"].as_u64()))
            .collect::<Vec<_>>(),
        vec![(a.tenant.to_string().as_str(), Some(2))],
        "only the tenant with failures: {overview}"
    );
    let portal = run
        .admin_api("portal", KeyScope { tenant: Some(b.tenant), read_only: true, read_payloads: false })
        .await;
    let (status, own) =
        portal.call(reqwest::Method::GET, format!("/admin/v1/tenants/{}/activity", b.tenant), None).await;
    assert_eq!(
        (status, own["total"]["delivered"].as_u64(), own["total"]["failed"].as_u64()),
        (200, Some(1), Some(0)),
        "{own}"
    );
    let (status, other) =
        portal.call(reqwest::Method::GET, format!("/admin/v1/tenants/{}/activity", a.tenant), None).await;
    assert_eq!(status, 404, "{other}");
}

/// A tenant's shards moved to the other worker while both servers still place it on the old one
/// (a placement is trusted for 30 s): its batches go to the old worker's writer. The old
/// placement's tables are still there until Citus's cleanup drops them, and nothing would stop
/// a batch from writing them but the hold (ADR 30): the old worker refuses to hold a shard it
/// no longer has, the batch goes through the distributed tables (Citus forwards it to the new
/// worker), and the servers look the tenant up again. Every copy acknowledged, each event
/// dispatched once and recorded once on the new worker; none in the old placement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_a_tenant_moved_to_another_worker_is_written_there_and_never_in_its_old_placement() {
    let run = Run::start().await;
    run.warm_up(&run.placed).await;
    let moved = &run.placed[0];
    let (from, to) = (moved.worker, 1 - moved.worker);
    let cluster = &run.cluster;
    let shard = cluster
        .coordinator_sql(&format!(
            "SELECT get_shard_id_for_distribution_column('messaging_event_receipts', '{}')",
            moved.tenant
        ))
        .expect("the tenant's shard");
    // The shard group, moved with writes blocked while it is copied (the test's nodes have no
    // logical replication); Citus keeps the old placement until its cleanup runs.
    let move_it = cluster.coordinator_sql(&format!(
        "SELECT citus_move_shard_placement({shard}, '127.0.0.1', {}, '127.0.0.1', {}, shard_transfer_mode := 'block_writes')",
        cluster.worker_port(from),
        cluster.worker_port(to)
    ));
    assert!(move_it.is_some(), "the shard group moved");
    assert_eq!(cluster.worker_of(moved.tenant), to);
    let old_placement = format!(
        "SET citus.override_table_visibility = off; SELECT count(*) FROM messaging_event_receipts_{shard} \
          WHERE external_event_id LIKE 'EvMoved%'"
    );
    assert!(
        cluster.worker_sql(from, &old_placement).is_some(),
        "Citus keeps the old placement until its cleanup, which is what a batch must not write"
    );
    run.reset_statement_counts();

    let bases = run.bases();
    let mut sends = Vec::new();
    for e in 0..10 {
        let id = format!("EvMoved{e}");
        for copy in 0..2u32 {
            let (http, base, team, id) =
                (run.http.clone(), bases[(e + copy as usize) % 2].clone(), moved.team.clone(), id.clone());
            sends.push(tokio::spawn(async move { post(&http, &base, &team, &id, copy).await }));
        }
    }
    for send in sends {
        assert_eq!(send.await.unwrap(), Some(200), "every copy is acknowledged: {}", run.logs());
    }
    run.quiesce().await;
    for e in 0..10 {
        let id = format!("EvMoved{e}");
        assert_eq!(run.agent.count_for(&id), 1, "{id} dispatched once: {}", run.logs());
        assert_eq!(run.receipts_of(&id), 1, "{id} has one receipt, where the coordinator finds it");
    }
    // The first batches went to the old worker's writer and were written from there through
    // the distributed tables, not in the old placement's tables.
    let routed = cluster.calls_of(Some(from), DISTRIBUTED_CLAIMS);
    assert!(routed > 0, "the old worker's writer wrote through the distributed tables: {}", run.logs());
    // Refused there, the servers looked the tenant up again: later events, one at a time, go
    // to its new worker and its shards' tables there, none to the old one.
    for e in 0..6 {
        let id = format!("EvMovedLater{e}");
        assert_eq!(post(&run.http, &bases[e % 2], &moved.team, &id, 0).await, Some(200));
    }
    run.quiesce().await;
    assert_eq!(
        cluster.calls_of(Some(from), DISTRIBUTED_CLAIMS),
        routed,
        "nothing more sent to the old worker"
    );
    assert!(
        cluster.calls_of(Some(to), HOLDS) > 0 && cluster.calls_of(Some(to), SHARD_CLAIMS) > 0,
        "the new worker holds the tenant's shards and takes its claims in them: {}",
        run.logs()
    );
    let moved_events = "external_event_id LIKE 'EvMoved%' AND handled_at IS NOT NULL";
    assert_eq!(
        run.rows_on_worker_where(to, "messaging_event_receipts", moved.tenant, moved_events),
        16,
        "recorded and completed on the worker that holds the shard now"
    );
    match cluster.worker_sql(from, &old_placement) {
        Some(old) => {
            assert_eq!(
                old.lines().last(),
                Some("0"),
                "the old placement took none of the moved tenant's events"
            )
        }
        // Citus's cleanup (every 15 s) dropped it meanwhile: nothing can be in it.
        None => eprintln!("citus: the old placement was dropped before it could be read"),
    }
}

/// The hold (ADR 30) takes the lock a shard move takes for its final switch, for as long as the
/// batch's transaction lasts: a move's `ExclusiveLock` on the shard's metadata waits for it
/// (here, given up after 200 ms), and is granted once it commits. And it refuses to hold a shard
/// the node does not have, or to hold one under a snapshot older than its lock, and refuses
/// every role but the serving processes'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_citus_a_held_shard_keeps_a_moves_final_switch_waiting_until_the_batch_commits() {
    use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
    let run = Run::start_with_servers(0).await;
    let placed = &run.placed[0];
    let cluster = &run.cluster;
    let shard = cluster
        .coordinator_sql(&format!(
            "SELECT get_shard_id_for_distribution_column('messaging_event_receipts', '{}')",
            placed.tenant
        ))
        .expect("the tenant's shard");
    let hold = |isolation: &str| {
        format!("BEGIN ISOLATION LEVEL {isolation}; SELECT public.doorman_hold_shards('{{{shard}}}')")
    };
    let mut batch = AsyncPgConnection::establish(&cluster.worker_url(placed.worker, SERVER_ROLE))
        .await
        .expect("the server's login on the tenant's worker");
    batch.batch_execute(&hold("READ COMMITTED")).await.expect("the worker holds the tenant's shard");
    // What a move's final switch runs on every node (BlockWritesToShardList): ExclusiveLock, 7.
    let switch =
        format!("SET lock_timeout = '200ms'; SELECT lock_shard_metadata(7, ARRAY[{shard}]::bigint[])");
    assert_eq!(
        cluster.worker_sql(placed.worker, &switch),
        None,
        "the switch waits while the batch holds the shard"
    );
    batch.batch_execute("COMMIT").await.expect("the batch commits");
    assert!(cluster.worker_sql(placed.worker, &switch).is_some(), "and goes on once it has committed");

    let mut elsewhere = AsyncPgConnection::establish(&cluster.worker_url(1 - placed.worker, SERVER_ROLE))
        .await
        .expect("the server's login on the other worker");
    let refused =
        elsewhere.batch_execute(&hold("READ COMMITTED")).await.expect_err("not this worker's shard");
    assert!(refused.to_string().contains("a shard is no longer on this node"), "{refused}");
    let _ = elsewhere.batch_execute("ROLLBACK").await;
    let repeatable =
        batch.batch_execute(&hold("REPEATABLE READ")).await.expect_err("a snapshot older than the lock");
    assert!(repeatable.to_string().contains("read committed"), "{repeatable}");
    let _ = batch.batch_execute("ROLLBACK").await;

    // It runs as the tables' owner, so only the serving processes' role may call it: the admin
    // processes' login may not hold (and so keep a move waiting on) any shard.
    let mut admin = AsyncPgConnection::establish(&cluster.worker_url(placed.worker, ADMIN_ROLE))
        .await
        .expect("the admin processes' login on the worker");
    let denied =
        admin.batch_execute(&hold("READ COMMITTED")).await.expect_err("not the admin processes' to call");
    assert!(denied.to_string().contains("permission denied"), "{denied}");
}

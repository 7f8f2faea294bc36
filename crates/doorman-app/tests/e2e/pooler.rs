//! Through PgBouncer in transaction pooling mode (`DOORMAN_DB_POOL_MODE=transaction`): the
//! acceptance of a delivery holds when consecutive transactions land on different server
//! connections, and the directory's listener keeps a session of its own, directly.

use std::time::Instant;

use doorman_testkit::FakeAgent;
use doorman_testkit::database::{SERVER_ROLE, TestDatabase, tenant_with_agent, with_address};
use doorman_testkit::pgbouncer::PgBouncer;

use crate::helpers::{
    AGENT_SECRET, deliver_as_slack, directory_notices, http_client, post_event, quiesce, receipts_of,
    spawn_serve_on, wait_for_directory_notice_since,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_is_claimed_once_dispatched_completed_and_paused_through_a_transaction_pooler() {
    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let operator = db.operator();
    let tenant = tenant_with_agent(&operator, "T1", agent.url(), AGENT_SECRET).await;
    // Fewer server connections than Doorman's pools hold: its transactions share them.
    let bouncer = PgBouncer::start(db.server_addr(), &[SERVER_ROLE], 3);
    let through_bouncer = with_address(&db.server_url(), bouncer.addr());
    let direct = db.server_url();
    let server = spawn_serve_on(
        &through_bouncer,
        "warn",
        &["--workers", "1", "--db-pool-mode", "transaction", "--listen-database-url", &direct],
    );
    let http = http_client();
    let base = server.base().to_owned();

    // Claim, then a duplicate; dispatch and completion.
    assert_eq!(post_event(&http, &base, "T1", "EvPooled").await, 200);
    assert_eq!(post_event(&http, &base, "T1", "EvPooled").await, 200);
    quiesce(&http, server.metrics_base()).await;
    assert_eq!(agent.count_for("EvPooled"), 1, "dispatched once");

    // Many at once, so statements of different deliveries interleave on shared server
    // connections: each event once, no error. On a slow machine the in-flight bound may fill
    // while outcomes queue behind the three server connections, and a delivery is answered
    // 503 "busy": Slack sends it again, and so do these senders, until it is taken.
    let events: Vec<String> = (0..200).map(|i| format!("EvPooled{i}")).collect();
    let deliveries = futures_util::future::join_all(events.chunks(25).map(|chunk| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let mut deliveries = 0;
            for id in chunk {
                deliveries += deliver_as_slack(&http, &base, "T1", id).await;
            }
            deliveries
        }
    }))
    .await;
    eprintln!("pooler: 200 events taken in {} deliveries", deliveries.iter().sum::<u32>());
    quiesce(&http, server.metrics_base()).await;
    for id in events.iter().chain([&"EvPooled".to_owned()]) {
        assert_eq!(agent.count_for(id), 1, "{id}");
    }
    let unfinished = operator.stranded().await.len() + operator.failed().await.len();
    assert_eq!(unfinished, 0, "every receipt completed");
    let handled = receipts_of(&db).await.iter().filter(|r| r.handled_at.is_some()).count();
    assert_eq!(handled, 201, "every receipt marked handled");

    // A pause is heard (the listener connects directly) and applies from its notice on.
    let notices = directory_notices(&http, server.metrics_base()).await;
    operator.pause(tenant, true).await.unwrap();
    let paused_at = Instant::now();
    wait_for_directory_notice_since(&http, server.metrics_base(), notices).await;
    eprintln!("pooler: the pause was heard within {} ms", paused_at.elapsed().as_millis());
    assert_eq!(post_event(&http, &base, "T1", "EvAfterPause").await, 503, "the pause did not apply");
    assert!(!server.logs().contains("ERROR"), "{}", server.logs());
    drop(bouncer);
}

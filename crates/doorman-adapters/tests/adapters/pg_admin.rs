//! The operator actions' adapters on real PostgreSQL: as the command line runs them (the
//! tables' owner) and as the admin API does (`doorman_admin`, under row-level security).

use std::num::NonZeroU32;
use std::sync::Arc;

use chrono::Duration;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use doorman_adapters::bridge::DestinationPolicy;
use doorman_adapters::postgres::PgOperatorPorts;
use doorman_adapters::postgres::admin::keys::Presented;
use doorman_adapters::postgres::pool::{self, ADMIN_ROLE, PoolSettings, act_for};
use doorman_domain::ports::{AdminKeys, OperatorPorts, ReceiptStore, Tenants};
use doorman_domain::usecases::operator::{Operator, OperatorSettings};
use doorman_domain::{
    Actor, ApiKey, AuditAction, AuditCursor, AuditFilter, Caller, IdempotencyKey, KeyId, KeyName, KeyRefusal,
    KeyScope, OperatorError, PageLimit, PageRequest, RedeliverySchedule, RequestId, TenantCursor, TenantId,
    TenantName, TenantSearch, WorkspaceId,
};
use doorman_testkit::database::{TestDatabase, receipt_store, test_keys};

use crate::fixtures::{days_ago, delivered, failed, key, now, receipt, tenant_with_team};

/// The use cases as the admin API runs them: logged in as a member of `doorman_admin` only.
pub(crate) fn admin(db: &TestDatabase) -> Operator<PgOperatorPorts> {
    let pool = pool::connect_as(&db.admin_url(), &PoolSettings::default(), Some(ADMIN_ROLE));
    let ports =
        PgOperatorPorts::new(pool, Some(Arc::new(test_keys())), DestinationPolicy { allow_private: true });
    let settings = OperatorSettings {
        install_base_url: None,
        console_base_url: None,
        stranded_after: std::time::Duration::from_secs(600),
        replay_hold: std::time::Duration::from_secs(90),
    };
    Operator::new(ports, settings)
}

fn key_caller(tenant: Option<TenantId>, read_only: bool) -> Caller {
    Caller {
        actor: Actor::Key(ApiKey {
            id: KeyId::generate(),
            name: "backend".into(),
            scope: KeyScope { tenant, read_only, read_payloads: false },
        }),
        request: RequestId::new("req-test").unwrap(),
    }
}

fn name(name: &str) -> TenantName {
    TenantName::new(name).unwrap()
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql).get_result::<Count>(conn).await.unwrap().n
}

#[tokio::test]
async fn a_workspace_links_to_one_tenant_only_and_only_a_new_link_is_audited() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "T1").await;
    let b = op.create_tenant("other").await;

    assert_eq!(op.link(b, Some("T1"), None).await.unwrap_err(), OperatorError::WorkspaceTaken);
    assert!(!op.link(a, Some("T1"), None).await.unwrap().new, "linking it again changes nothing");
    assert!(op.link(b, None, Some("E1")).await.unwrap().new);
    assert_eq!(op.link(a, None, Some("E1")).await.unwrap_err(), OperatorError::WorkspaceTaken);

    let links =
        count(&mut db.owner().await, "SELECT count(*) AS n FROM admin_audit WHERE action = 'workspace.link'")
            .await;
    assert_eq!(links, 2, "T1 for a, E1 for b: refusals and repeats write nothing");
}

#[tokio::test]
async fn actions_on_an_unknown_tenant_or_a_missing_agent_say_so_without_cli_wording() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let ghost = TenantId::generate();
    assert_eq!(op.pause(ghost, true).await, Err(OperatorError::UnknownTenant(ghost)));
    assert_eq!(
        op.set_agent(ghost, crate::fixtures::AGENT_URL, crate::fixtures::AGENT_SECRET).await,
        Err(OperatorError::UnknownTenant(ghost))
    );
    let bare = op.create_tenant("bare").await;
    let error = op.pause(bare, true).await.unwrap_err();
    assert_eq!(error, OperatorError::NoAgent(bare));
    assert!(!error.to_string().contains("doorman "), "no command named: {error}");
}

#[tokio::test]
async fn the_admin_role_writes_the_directory_reads_one_tenant_at_a_time_and_claims_nothing() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let a = admin.create_tenant(&writer, name("A"), None).await.unwrap().tenant.id;
    let b = admin.create_tenant(&writer, name("B"), None).await.unwrap().tenant.id;
    admin
        .link_workspace(&writer, a, Some(doorman_domain::WorkspaceId::new("TA").unwrap()), None)
        .await
        .unwrap();
    let url = doorman_domain::AgentUrl::parse(crate::fixtures::AGENT_URL).unwrap();
    let secret = doorman_domain::AgentSecret::parse(crate::fixtures::AGENT_SECRET).unwrap();
    admin.set_agent(&writer, a, url, secret).await.unwrap();
    admin.pause_agent(&writer, a, true).await.unwrap();
    assert!(admin.agent(&writer, a).await.unwrap().paused);

    // The server's receipts of both tenants, as doorman_admin sees them.
    tenant_with_team(&db.operator(), "TB").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(a, "EvA", now())).await.unwrap();
    store.claim(&receipt(b, "EvB", now())).await.unwrap();
    let mut conn = AsyncPgConnection::establish(&db.admin_url()).await.unwrap();
    diesel::sql_query(format!("SET ROLE {ADMIN_ROLE}")).execute(&mut conn).await.unwrap();
    assert_eq!(count(&mut conn, "SELECT count(*) AS n FROM tenants").await, 0, "no tenant named: none seen");
    assert_eq!(count(&mut conn, "SELECT count(*) AS n FROM messaging_event_receipts").await, 0);
    let seen = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            act_for(conn, a).await?;
            Ok(count(conn, "SELECT count(*) AS n FROM messaging_event_receipts").await)
        })
        .await
        .unwrap();
    assert_eq!(seen, 1, "tenant A's receipt only");

    // It may not claim, nor read what only the server needs, nor change a key's secret or
    // scope (it may revoke one, and record its use: keys are managed over HTTP by a key that
    // may do everything).
    for refused in [
        format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{a}', 'slack', 'EvX', 'x', 0, now())"
        ),
        "SELECT count(*) AS n FROM messaging_install_states".to_owned(),
        "UPDATE admin_keys SET secret_hash = repeat('0', 64)".to_owned(),
        "UPDATE admin_keys SET tenant_id = NULL, read_only = false".to_owned(),
        "INSERT INTO messaging_installations (tenant_id, platform, team_id, is_enterprise_install, app_id, bot_user_id, scopes) \
         VALUES (gen_random_uuid(), 'slack', 'T', false, 'A', 'U', '')"
            .to_owned(),
    ] {
        let error = diesel::sql_query(&refused).execute(&mut conn).await.unwrap_err();
        assert!(error.to_string().contains("permission denied"), "{refused}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_identical_creations_under_one_key_make_one_tenant() {
    let db = TestDatabase::create().await;
    let admin = Arc::new(admin(&db));
    let caller = key_caller(None, false);
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (admin, caller) = (admin.clone(), caller.clone());
            tokio::spawn(async move {
                let key = IdempotencyKey::new("create-acme-1").unwrap();
                admin.create_tenant(&caller, name("Acme"), Some(key)).await
            })
        })
        .collect();
    let mut ids = Vec::new();
    let mut new = 0;
    for task in tasks {
        // Each is answered with the tenant, or told the first is still being processed.
        match task.await.unwrap() {
            Ok(created) => {
                ids.push(created.tenant.id);
                new += usize::from(created.new);
            }
            Err(error) => assert_eq!(error, OperatorError::IdempotencyKeyInUse),
        }
    }
    let again =
        admin.create_tenant(&caller, name("Acme"), Some(IdempotencyKey::new("create-acme-1").unwrap()));
    let again = again.await.unwrap();
    assert!(!again.new, "once the first has finished, the same request repeats its answer");
    ids.push(again.tenant.id);
    ids.dedup();
    assert_eq!(ids.len(), 1, "every answer names the one tenant");
    assert_eq!(new, 1, "one request created it; the others repeated its answer or were told to wait");
    let mut owner = db.owner().await;
    assert_eq!(count(&mut owner, "SELECT count(*) AS n FROM tenants").await, 1);
    assert_eq!(
        count(&mut owner, "SELECT count(*) AS n FROM admin_audit WHERE action = 'tenant.create'").await,
        1
    );

    let reused =
        admin.create_tenant(&caller, name("Other"), Some(IdempotencyKey::new("create-acme-1").unwrap()));
    assert_eq!(reused.await.unwrap_err(), OperatorError::IdempotencyKeyReused);
    let another_key = key_caller(None, false);
    let theirs =
        admin.create_tenant(&another_key, name("Acme"), Some(IdempotencyKey::new("create-acme-1").unwrap()));
    assert!(theirs.await.unwrap().new, "keys are per caller");
}

/// While the first creation under a key is being processed (held here inside its transaction
/// by a trigger waiting for a lock the test holds), the same request under the key is told so
/// at once, without waiting and without creating anything; once the first commits, the same
/// request repeats its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_under_a_key_whose_first_request_is_still_open_is_told_so_at_once() {
    let db = TestDatabase::create().await;
    let admin = Arc::new(admin(&db));
    let caller = key_caller(None, false);
    let mut holder = db.owner().await;
    SimpleAsyncConnection::batch_execute(
        &mut holder,
        "CREATE FUNCTION hold_tenant_insert() RETURNS trigger LANGUAGE plpgsql AS            $$ BEGIN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); RETURN NEW; END $$;          CREATE TRIGGER hold_tenant_insert BEFORE INSERT ON tenants FOR EACH ROW EXECUTE FUNCTION hold_tenant_insert();          SELECT pg_advisory_lock(4242);",
    )
    .await
    .unwrap();
    let key = || Some(IdempotencyKey::new("create-acme-held").unwrap());
    let first = {
        let (admin, caller) = (admin.clone(), caller.clone());
        tokio::spawn(async move { admin.create_tenant(&caller, name("Acme"), key()).await })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count(
        &mut holder,
        "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'",
    )
    .await
        == 0
    {
        assert!(std::time::Instant::now() < deadline, "the first creation never reached its insert");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let busy = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        admin.create_tenant(&caller, name("Acme"), key()),
    )
    .await
    .expect("answered without waiting for the first request");
    assert_eq!(busy.unwrap_err(), OperatorError::IdempotencyKeyInUse);
    diesel::sql_query("SELECT pg_advisory_unlock(4242)").execute(&mut holder).await.unwrap();
    let first = first.await.unwrap().unwrap();
    assert!(first.new);
    let repeated = admin.create_tenant(&caller, name("Acme"), key()).await.unwrap();
    assert_eq!((repeated.tenant.id, repeated.new), (first.tenant.id, false));
    assert_eq!(count(&mut holder, "SELECT count(*) AS n FROM tenants").await, 1);
}

#[tokio::test]
async fn tenants_page_in_creation_order_and_a_scoped_key_lists_its_own() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(admin.create_tenant(&writer, name(&format!("T{i}")), None).await.unwrap().tenant.id);
    }
    let mut seen = Vec::new();
    let mut page = PageRequest::<TenantCursor> { limit: PageLimit::new(2).unwrap(), after: None };
    let mut pages = 0;
    loop {
        let listed = admin.tenants(&writer, vec![], &page).await.unwrap();
        pages += 1;
        seen.extend(listed.items.iter().map(|t| t.id));
        match listed.next {
            Some(next) => page.after = Some(next),
            None => break,
        }
    }
    assert_eq!((seen, pages), (made.clone(), 3));

    let scoped = key_caller(Some(made[3]), true);
    let own = admin.tenants(&scoped, vec![], &PageRequest::default()).await.unwrap();
    assert_eq!(own.items.iter().map(|t| t.id).collect::<Vec<_>>(), vec![made[3]]);
}

/// The tenant's stored schedule, as the owner reads the column.
async fn stored_schedule(db: &TestDatabase, tenant: TenantId) -> Option<String> {
    #[derive(diesel::QueryableByName)]
    struct Schedule {
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        schedule: Option<String>,
    }
    diesel::sql_query(format!(
        "SELECT redelivery_schedule::text AS schedule FROM tenants WHERE id = '{tenant}'"
    ))
    .get_result::<Schedule>(&mut db.owner().await)
    .await
    .unwrap()
    .schedule
}

#[tokio::test]
async fn redelivery_is_stored_as_its_delays_read_back_by_every_reading_and_off_is_null() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let tenant = admin.create_tenant(&writer, name("Redelivered"), None).await.unwrap().tenant;
    assert_eq!(tenant.redelivery, None, "off by default");
    let schedule = RedeliverySchedule::parse("5s,5m,30m").unwrap();
    admin.set_redelivery(&writer, tenant.id, Some(schedule.clone())).await.unwrap();
    assert_eq!(stored_schedule(&db, tenant.id).await.as_deref(), Some("{5,300,1800}"));
    let read = admin.tenant(&writer, tenant.id).await.unwrap();
    assert_eq!((read.redelivery.as_ref(), read.retain_payloads), (Some(&schedule), false), "its own setting");
    let listed = admin.tenants(&writer, vec![], &PageRequest::default()).await.unwrap();
    assert_eq!(listed.items[0].redelivery.as_ref(), Some(&schedule));

    admin.set_redelivery(&writer, tenant.id, None).await.unwrap();
    assert_eq!(stored_schedule(&db, tenant.id).await, None);
    assert_eq!(admin.tenant(&writer, tenant.id).await.unwrap().redelivery, None);

    let trail = admin
        .audit(&writer, Some(tenant.id), &AuditFilter::default(), &PageRequest::<AuditCursor>::default())
        .await
        .unwrap();
    let entries: Vec<_> =
        trail.items.iter().map(|r| (r.action.as_str(), r.target.as_deref().unwrap_or_default())).collect();
    assert_eq!(
        entries,
        [("tenant.redelivery", "off"), ("tenant.redelivery", "5s,5m,30m"), ("tenant.create", "Redelivered")]
    );
}

/// The tenant's allowance as the owner reads the column.
async fn stored_allowance(db: &TestDatabase, tenant: TenantId) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Allowance {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        allows: bool,
    }
    diesel::sql_query(format!(
        "SELECT read_only_portals_read_payloads AS allows FROM tenants WHERE id = '{tenant}'"
    ))
    .get_result::<Allowance>(&mut db.owner().await)
    .await
    .unwrap()
    .allows
}

/// Written as the admin API writes it (`doorman_admin`, under row-level security), by support
/// and by the tenant's own writing key; read back by every reading at once; the tenant's other
/// settings and another tenant untouched; each change audited.
#[tokio::test]
async fn a_tenants_allowance_for_its_read_only_portals_is_stored_read_back_at_once_and_audited() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let tenant = admin.create_tenant(&writer, name("Allowing"), None).await.unwrap().tenant;
    let other = admin.create_tenant(&writer, name("Other"), None).await.unwrap().tenant.id;
    assert!(!tenant.read_only_portals_read_payloads, "off by default");
    let schedule = RedeliverySchedule::parse("5s").unwrap();
    admin.set_redelivery(&writer, tenant.id, Some(schedule.clone())).await.unwrap();

    let own = key_caller(Some(tenant.id), false);
    admin.set_read_only_portals_read_payloads(&own, tenant.id, true).await.unwrap();
    assert!(stored_allowance(&db, tenant.id).await);
    let read = admin.tenant(&writer, tenant.id).await.unwrap();
    assert!(read.read_only_portals_read_payloads);
    assert_eq!((read.retain_payloads, read.redelivery.as_ref()), (false, Some(&schedule)), "nothing else");
    let listed = admin.tenants(&writer, vec![], &PageRequest::default()).await.unwrap();
    let allows: Vec<_> = listed.items.iter().map(|t| (t.id, t.read_only_portals_read_payloads)).collect();
    assert_eq!(allows, [(tenant.id, true), (other, false)], "another tenant's is its own");
    assert!(admin.tenant(&own, tenant.id).await.unwrap().read_only_portals_read_payloads, "read in scope");

    admin.set_read_only_portals_read_payloads(&writer, tenant.id, false).await.unwrap();
    assert!(!stored_allowance(&db, tenant.id).await);
    assert!(!admin.tenant(&own, tenant.id).await.unwrap().read_only_portals_read_payloads);
    // A scoped key meets another tenant as unknown, and changes nothing of it.
    let refused = admin.set_read_only_portals_read_payloads(&own, other, true).await.unwrap_err();
    assert_eq!(refused, OperatorError::UnknownTenant(other));
    assert!(!stored_allowance(&db, other).await);

    let trail = admin
        .audit(&writer, Some(tenant.id), &AuditFilter::default(), &PageRequest::<AuditCursor>::default())
        .await
        .unwrap();
    let entries: Vec<_> =
        trail.items.iter().map(|r| (r.action.as_str(), r.target.as_deref().unwrap_or_default())).collect();
    assert_eq!(
        entries[..2],
        [("tenant.read_only_portals_read_payloads", "off"), ("tenant.read_only_portals_read_payloads", "on")]
    );
}

#[tokio::test]
async fn a_stored_schedule_the_model_refuses_is_an_unexpected_storage_error_not_a_guess() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let tenant = admin.create_tenant(&writer, name("Drifted"), None).await.unwrap().tenant.id;
    // Only a schema drift could store one: the table's check refuses it otherwise.
    let mut owner = db.owner().await;
    diesel::sql_query("ALTER TABLE tenants DROP CONSTRAINT tenants_redelivery_schedule_check")
        .execute(&mut owner)
        .await
        .unwrap();
    diesel::sql_query(format!("UPDATE tenants SET redelivery_schedule = '{{}}' WHERE id = '{tenant}'"))
        .execute(&mut owner)
        .await
        .unwrap();
    let read = admin.tenant(&writer, tenant).await.unwrap_err();
    assert!(
        matches!(&read, OperatorError::Storage(doorman_domain::StorageError::Unexpected(why)) if why.contains("redelivery schedule")),
        "{read:?}"
    );
}

#[tokio::test]
async fn tenants_are_found_by_part_of_their_name_ignoring_case_and_wildcards_are_text() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let mut ids = std::collections::HashMap::new();
    for n in ["Acme Corp", "ACME 100%", "Globex", "a_b"] {
        ids.insert(n, admin.create_tenant(&writer, name(n), None).await.unwrap().tenant.id);
    }
    let found = async |text: &str, caller: &Caller| {
        let search = vec![TenantSearch::Name(TenantName::new(text).unwrap())];
        let page = admin.tenants(caller, search, &PageRequest::default()).await.unwrap();
        page.items.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert_eq!(found("acme", &writer).await, ["Acme Corp", "ACME 100%"]);
    assert_eq!(found("0%", &writer).await, ["ACME 100%"]);
    assert_eq!(found("%", &writer).await, ["ACME 100%"], "% is text, not a wildcard");
    assert_eq!(found("_", &writer).await, ["a_b"], "_ is text, not a wildcard");
    assert!(found("initech", &writer).await.is_empty());
    // A scoped key searches only its own tenant.
    let scoped = key_caller(Some(ids["Globex"]), true);
    assert!(found("acme", &scoped).await.is_empty());
    assert_eq!(found("glob", &scoped).await, ["Globex"]);
}

#[tokio::test]
async fn support_finds_a_tenant_by_name_part_id_prefix_or_slack_team_or_enterprise_id() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let mut ids = std::collections::HashMap::new();
    for n in ["Acme", "Globex", "Initech", "Umbrella"] {
        ids.insert(n, admin.create_tenant(&writer, name(n), None).await.unwrap().tenant.id);
    }
    let ws = |id: &str| Some(WorkspaceId::new(id).unwrap());
    admin.link_workspace(&writer, ids["Acme"], ws("TACME1"), None).await.unwrap();
    admin.link_workspace(&writer, ids["Globex"], None, ws("EGLOBEX")).await.unwrap();
    admin.link_workspace(&writer, ids["Initech"], ws("TINI1"), ws("EGRID")).await.unwrap();
    admin.link_workspace(&writer, ids["Umbrella"], ws("TUMB1"), ws("EGRID")).await.unwrap();
    let found = async |text: &str, caller: &Caller| {
        let search = vec![TenantSearch::Anything(TenantName::new(text).unwrap())];
        let page = admin.tenants(caller, search, &PageRequest::default()).await.unwrap();
        page.items.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert_eq!(found("glob", &writer).await, ["Globex"], "part of the name");
    assert_eq!(found("TACME1", &writer).await, ["Acme"], "a team id");
    assert_eq!(found("EGLOBEX", &writer).await, ["Globex"], "an org-wide enterprise id");
    assert_eq!(found("EGRID", &writer).await, ["Initech", "Umbrella"], "teams inside an enterprise");
    assert!(found("TACME", &writer).await.is_empty(), "a workspace id is whole");
    let acme = ids["Acme"].to_string();
    assert_eq!(found(&acme[..8], &writer).await, ["Acme"], "the start of the id");
    assert_eq!(found(&acme[..8].to_uppercase(), &writer).await, ["Acme"], "ignoring case");
    assert_eq!(found(&acme, &writer).await, ["Acme"], "the whole id");
    assert!(found("%", &writer).await.is_empty(), "% is text, not a wildcard");
    // A scoped key finds only its own tenant, whatever it searches.
    let scoped = key_caller(Some(ids["Initech"]), true);
    assert_eq!(found("EGRID", &scoped).await, ["Initech"]);
    assert!(found("TACME1", &scoped).await.is_empty());
    // With a name filter too, a tenant must match both.
    let both = vec![
        TenantSearch::Name(TenantName::new("um").unwrap()),
        TenantSearch::Anything(TenantName::new("EGRID").unwrap()),
    ];
    let page = admin.tenants(&writer, both, &PageRequest::default()).await.unwrap();
    assert_eq!(page.items.into_iter().map(|t| t.name).collect::<Vec<_>>(), ["Umbrella"]);
}

#[tokio::test]
async fn stranded_and_failed_listings_find_unfinished_receipts_only() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    let old = now() - Duration::minutes(30);
    for (tenant, id) in [(a, "Stranded"), (a, "Handled"), (a, "Failed"), (b, "StrandedB")] {
        store.claim(&receipt(tenant, id, old)).await.unwrap();
    }
    store.complete(&key(a, "Handled"), &delivered(now()), days_ago(7), 10).await.unwrap();
    store.record_failure(&key(a, "Failed"), &failed("agent answered HTTP 500", now())).await.unwrap();

    let mut all: Vec<String> = op.stranded().await.iter().map(|r| r.key.external_id.to_string()).collect();
    all.sort();
    assert_eq!(all, ["Stranded", "StrandedB"]);
    let failed = op.failed().await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].failure.as_ref().unwrap().reason, "agent answered HTTP 500");

    // As the admin API reads them: one tenant, with the ten-minute threshold.
    store.claim(&receipt(a, "Recent", now())).await.unwrap();
    let admin = admin(&db);
    let reader = key_caller(Some(a), true);
    let stranded = admin
        .events(
            &reader,
            Some(a),
            Some(doorman_domain::EventState::Stranded),
            Default::default(),
            &PageRequest::default(),
        )
        .await
        .unwrap();
    let names: Vec<_> = stranded.items.iter().map(|r| r.receipt.key.external_id.as_str()).collect();
    assert_eq!(names, ["Stranded"], "not B's, not the recent one");
}

#[tokio::test]
async fn a_tenant_listings_total_counts_what_its_search_finds_up_to_what_is_asked() {
    use doorman_domain::ports::Tenants as _;
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let mut acme = Vec::new();
    for n in 0..4 {
        acme.push(admin.create_tenant(&writer, name(&format!("Acme {n}")), None).await.unwrap().tenant.id);
    }
    admin.create_tenant(&writer, name("Globex"), None).await.unwrap();
    let tenants = admin.ports().tenants();
    let acme_search = || vec![TenantSearch::Anything(name("acme"))];
    assert_eq!(tenants.count(None, vec![], 1001).await.unwrap(), 5);
    assert_eq!(tenants.count(None, acme_search(), 1001).await.unwrap(), 4);
    assert_eq!(tenants.count(None, acme_search(), 2).await.unwrap(), 2, "no more than asked");
    assert_eq!(tenants.count(Some(acme[0]), vec![], 1001).await.unwrap(), 1, "a scoped key's own");
}

/// A listing's total counts what its pages list, in its tenant, state, window and type, and
/// stops at what it is asked to count up to.
#[tokio::test]
async fn an_event_listings_total_counts_its_selection_up_to_what_is_asked() {
    use doorman_domain::ports::Ledger;
    use doorman_domain::{EventFilter, EventState};
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    let old = now() - Duration::minutes(30);
    for n in 0..5 {
        store.claim(&receipt(a, &format!("Fail{n}"), old)).await.unwrap();
        store
            .record_failure(&key(a, &format!("Fail{n}")), &failed("agent answered HTTP 500", now()))
            .await
            .unwrap();
    }
    store.claim(&receipt(a, "Handled", old)).await.unwrap();
    store.complete(&key(a, "Handled"), &delivered(now()), days_ago(7), 10).await.unwrap();
    store.claim(&receipt(a, "Stranded", old)).await.unwrap();
    store.claim(&receipt(b, "FailB", old)).await.unwrap();
    store.record_failure(&key(b, "FailB"), &failed("agent answered HTTP 500", now())).await.unwrap();

    let admin = admin(&db);
    let ledger = admin.ports().ledger();
    let filter = |state| EventFilter {
        state: Some(state),
        since: None,
        until: None,
        event_type: None,
        stranded_before: now() - Duration::minutes(10),
    };
    let count =
        async |tenant, filter: EventFilter, up_to| ledger.count(Some(tenant), &filter, up_to).await.unwrap();
    assert_eq!(count(a, filter(EventState::Failed), 1001).await, 5);
    assert_eq!(count(a, filter(EventState::Failed), 3).await, 3, "no more than asked");
    assert_eq!(count(b, filter(EventState::Failed), 1001).await, 1, "the tenant's own");
    assert_eq!(count(a, filter(EventState::Handled), 1001).await, 1);
    assert_eq!(count(a, filter(EventState::Stranded), 1001).await, 1);
    assert_eq!(count(a, filter(EventState::InFlight), 1001).await, 0);
    let later = EventFilter { since: Some(now() + Duration::minutes(1)), ..filter(EventState::Failed) };
    assert_eq!(count(a, later, 1001).await, 0, "the window counts as it lists");
    let other_type = EventFilter { event_type: Some("reaction_added".into()), ..filter(EventState::Failed) };
    assert_eq!(count(a, other_type, 1001).await, 0, "so does the type");
}

/// A read never writes: a read-only key scoped to one tenant lists its events in every state,
/// and selects its stranded ones for a (dry-run) replay, and no row of any table changes (the
/// sweep that marks stranded receipts is the background process's, and marks every tenant's).
/// The stranded are still all found: those the last sweep marked, and those stranded since.
#[tokio::test]
async fn listing_every_state_with_a_read_only_key_changes_no_row_and_finds_every_stranded_one() {
    use doorman_domain::ports::StoredEvents;
    use doorman_domain::{EventState, ReplaySelection};

    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "TA").await, tenant_with_team(&op, "TB").await);
    let store = receipt_store(db.pool());
    let ago = |minutes| now() - Duration::minutes(minutes);
    store.claim(&receipt(a, "Swept", ago(40))).await.unwrap();
    // The background sweep, up to half an hour ago: it marks A's receipt and moves its watermark.
    diesel::sql_query("SELECT doorman_sweep_receipts(now() - interval '30 minutes')")
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    for (tenant, id, minutes) in [
        (a, "StrandedSince", 20),
        (a, "Handled", 25),
        (a, "Failed", 25),
        (a, "InFlight", 0),
        (b, "StrandedB", 20),
    ] {
        store.claim(&receipt(tenant, id, ago(minutes))).await.unwrap();
    }
    store.complete(&key(a, "Handled"), &delivered(now()), days_ago(7), 10).await.unwrap();
    let failure = failed("agent answered HTTP 500", now());
    store.record_failure(&key(a, "Failed"), &failure).await.unwrap();

    let before = db.every_row().await;
    assert!(before.contains("StrandedB"), "the dump holds every tenant's receipts: {before}");
    let (admin, reader) = (admin(&db), key_caller(Some(a), true));
    let mut listed = Vec::new();
    for state in [EventState::Handled, EventState::Failed, EventState::InFlight, EventState::Stranded] {
        let page =
            admin.events(&reader, Some(a), Some(state), Default::default(), &PageRequest::default()).await;
        let ids: Vec<String> =
            page.unwrap().items.iter().map(|r| r.receipt.key.external_id.to_string()).collect();
        listed.push((state, ids));
    }
    let stored = doorman_adapters::postgres::PgStoredEvents::new(db.admin_pool(), Arc::new(test_keys()));
    let selected: Vec<String> = stored
        .select(a, &ReplaySelection::StrandedBefore(admin.stranded_before()))
        .await
        .unwrap()
        .iter()
        .map(|r| r.receipt.key.external_id.to_string())
        .collect();
    assert_eq!(db.every_row().await, before, "a read changed rows");

    let listed = |state| listed.iter().find(|(s, _)| *s == state).map(|(_, ids)| ids.clone()).unwrap();
    assert_eq!(listed(EventState::Handled), ["Handled"]);
    assert_eq!(listed(EventState::Failed), ["Failed"]);
    assert_eq!(listed(EventState::InFlight), ["InFlight"]);
    assert_eq!(
        listed(EventState::Stranded),
        ["Swept", "StrandedSince"],
        "marked, and stranded since the sweep"
    );
    assert_eq!(selected, ["Swept", "StrandedSince"]);
}

/// `was_deleted` as `doorman_admin` sees it: a tenant deleted is, one still there and one
/// that never was are not.
#[tokio::test]
async fn a_deleted_tenant_is_known_as_deleted_and_no_other() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let gone = op.create_tenant("Gone").await;
    let kept = op.create_tenant("Kept").await;
    op.use_cases().delete_tenant(op.caller(), gone).await.unwrap();
    let admin = admin(&db);
    let tenants = admin.ports().tenants();
    assert!(tenants.was_deleted(gone).await.unwrap());
    assert!(!tenants.was_deleted(kept).await.unwrap());
    assert!(!tenants.was_deleted(TenantId::generate()).await.unwrap());
}

#[tokio::test]
async fn prune_deletes_every_tenants_expired_receipts_in_batches() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    for i in 0..4 {
        store.claim(&receipt(a, &format!("A{i}"), days_ago(10))).await.unwrap();
        store.claim(&receipt(b, &format!("B{i}"), days_ago(10))).await.unwrap();
    }
    store.claim(&receipt(a, "Fresh", now())).await.unwrap();

    let pruned =
        db.maintenance().await.prune_expired(days_ago(7), NonZeroU32::new(3).unwrap()).await.unwrap();
    assert_eq!(pruned, 8);
    assert_eq!(op.stranded().await.len(), 1);
}

#[tokio::test]
async fn a_key_authenticates_by_its_secret_until_revoked_and_only_its_hash_is_stored() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let tenant = op.create_tenant("Acme").await;
    let scope = KeyScope { tenant: Some(tenant), read_only: true, read_payloads: false };
    let (made, secret) =
        op.use_cases().create_key(op.caller(), KeyName::new("support").unwrap(), scope, None).await.unwrap();
    let id = made.id;
    let admin = admin(&db);
    let keys = admin.ports().keys();

    let Presented::Valid(found) = keys.authenticate(secret.expose()).await.unwrap() else {
        panic!("the key authenticates")
    };
    assert_eq!((found.id, found.name.as_str(), found.scope), (id, "support", scope));
    let refused = |reason, key| Presented::Refused { reason, key };
    let wrong = format!("{}x", secret.expose());
    assert_eq!(keys.authenticate(&wrong).await.unwrap(), refused(KeyRefusal::WrongSecret, Some(id)));
    assert_eq!(keys.authenticate("dmk_nothing").await.unwrap(), refused(KeyRefusal::Malformed, None));
    let stranger = KeyId::generate();
    let unknown = format!("dmk_{}_c2VjcmV0", stranger.as_uuid().simple());
    assert_eq!(keys.authenticate(&unknown).await.unwrap(), refused(KeyRefusal::Unknown, Some(stranger)));

    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        row: String,
    }
    let stored: Vec<Row> = diesel::sql_query("SELECT k::text AS row FROM admin_keys k")
        .load(&mut db.owner().await)
        .await
        .unwrap();
    // `dmk_<key id>_<secret>`: the secret is base64url, which may itself hold `_`.
    let secret_part = secret.expose().splitn(3, '_').nth(2).unwrap();
    assert!(stored.iter().all(|r| !r.row.contains(secret_part)), "the secret is not stored");

    op.use_cases().revoke_key(op.caller(), id).await.unwrap();
    assert_eq!(
        keys.authenticate(secret.expose()).await.unwrap(),
        refused(KeyRefusal::Revoked, Some(id)),
        "revoked at once"
    );
    assert!(matches!(op.use_cases().revoke_key(op.caller(), id).await, Err(OperatorError::NotFound { .. })));
}

/// A key's payload permission is stored as made and read back by every reader of keys (its
/// bearer's authentication, one key, the listing), and a key made without it has none: what the
/// previous release makes (without the column) reads the same.
#[tokio::test]
async fn a_keys_payload_permission_is_kept_as_made_and_read_back_by_every_reader() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let tenant = op.create_tenant("Acme").await;
    let admin = admin(&db);
    let keys = admin.ports().keys();
    for scope in [
        KeyScope { tenant: None, read_only: true, read_payloads: true },
        KeyScope { tenant: Some(tenant), read_only: false, read_payloads: true },
        KeyScope { tenant: Some(tenant), read_only: true, read_payloads: false },
    ] {
        let (made, secret) =
            op.use_cases().create_key(op.caller(), KeyName::new("k").unwrap(), scope, None).await.unwrap();
        let Presented::Valid(found) = keys.authenticate(secret.expose()).await.unwrap() else {
            panic!("the key authenticates")
        };
        assert_eq!(found.scope, scope);
        assert_eq!(keys.get(made.id).await.unwrap().map(|k| k.scope), Some(scope));
        let listed = keys.list().await.unwrap();
        assert_eq!(listed.iter().find(|k| k.id == made.id).map(|k| k.scope), Some(scope));
    }
    // A key inserted as the previous release inserts one: no payloads.
    let id = KeyId::generate();
    diesel::sql_query(format!(
        "INSERT INTO admin_keys (id, name, tenant_id, read_only, secret_hash) \
         VALUES ('{id}', 'old', NULL, false, repeat('0', 64))"
    ))
    .execute(&mut db.owner().await)
    .await
    .unwrap();
    assert!(!keys.get(id).await.unwrap().expect("the key").scope.read_payloads);
}

/// When the key last authenticated, read as the owner.
pub(crate) async fn last_used(db: &TestDatabase, id: KeyId) -> Option<chrono::DateTime<chrono::Utc>> {
    #[derive(diesel::QueryableByName)]
    struct Used {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
        at: Option<chrono::DateTime<chrono::Utc>>,
    }
    diesel::sql_query(format!("SELECT last_used_at AS at FROM admin_keys WHERE id = '{id}'"))
        .get_result::<Used>(&mut db.owner().await)
        .await
        .unwrap()
        .at
}

#[tokio::test]
async fn a_key_stops_at_its_expiry_and_its_use_is_recorded_at_most_once_a_minute() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let scope = KeyScope { tenant: None, read_only: false, read_payloads: false };
    let in_an_hour = chrono::Utc::now() + chrono::Duration::hours(1);
    let (made, secret) = op
        .use_cases()
        .create_key(op.caller(), KeyName::new("temporary").unwrap(), scope, Some(in_an_hour))
        .await
        .unwrap();
    let admin = admin(&db);
    let keys = admin.ports().keys();
    assert_eq!(last_used(&db, made.id).await, None, "never used yet");
    assert!(matches!(keys.authenticate(secret.expose()).await.unwrap(), Presented::Valid(_)));
    let first = last_used(&db, made.id).await.expect("its use is recorded");
    assert!(matches!(keys.authenticate(secret.expose()).await.unwrap(), Presented::Valid(_)));
    assert_eq!(last_used(&db, made.id).await, Some(first), "not again within the minute");
    // A minute later (moved back here), the next use is recorded again.
    diesel::sql_query(format!(
        "UPDATE admin_keys SET last_used_at = now() - interval '61 seconds' WHERE id = '{}'",
        made.id
    ))
    .execute(&mut db.owner().await)
    .await
    .unwrap();
    assert!(matches!(keys.authenticate(secret.expose()).await.unwrap(), Presented::Valid(_)));
    assert!(last_used(&db, made.id).await.unwrap() > first);

    diesel::sql_query(format!(
        "UPDATE admin_keys SET expires_at = now() - interval '1 second' WHERE id = '{}'",
        made.id
    ))
    .execute(&mut db.owner().await)
    .await
    .unwrap();
    assert_eq!(
        keys.authenticate(secret.expose()).await.unwrap(),
        Presented::Refused { reason: KeyRefusal::Expired, key: Some(made.id) }
    );
    let listed = op.use_cases().keys(op.caller()).await.unwrap();
    assert!(listed[0].expires_at.is_some() && listed[0].last_used_at.is_some(), "{listed:?}");
}

#[tokio::test]
async fn the_audit_trail_says_who_did_what_newest_first_and_a_scoped_key_reads_its_own() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let a = admin.create_tenant(&writer, name("A"), None).await.unwrap().tenant.id;
    let b = admin.create_tenant(&writer, name("B"), None).await.unwrap().tenant.id;
    admin.set_retain_payloads(&writer, a, true).await.unwrap();
    let op = db.operator();
    op.pause(a, true).await.unwrap_err(); // no agent: refused, nothing audited
    op.link(b, Some("TB"), None).await.unwrap();

    let all = admin
        .audit(&writer, None, &AuditFilter::default(), &PageRequest::<AuditCursor>::default())
        .await
        .unwrap();
    let actions: Vec<_> = all.items.iter().map(|r| (r.action.as_str(), r.actor_kind.as_str())).collect();
    assert_eq!(
        actions,
        [
            ("workspace.link", "cli"),
            ("tenant.retain_payloads", "key"),
            ("tenant.create", "key"),
            ("tenant.create", "key")
        ]
    );
    let newest = &all.items[0];
    assert_eq!((newest.actor_id.as_str(), newest.actor_name.as_str()), ("test", "cli"));
    let keyed = &all.items[1];
    assert_eq!(
        (keyed.tenant, keyed.target.as_deref(), keyed.request_id.as_str()),
        (Some(a), Some("on"), "req-test")
    );
    assert_eq!(keyed.actor_name, "backend");

    let scoped = key_caller(Some(b), true);
    let own = admin.audit(&scoped, None, &AuditFilter::default(), &PageRequest::default()).await.unwrap();
    assert!(own.items.iter().all(|r| r.tenant == Some(b)) && own.items.len() == 2, "{:?}", own.items);
}

/// Writes an audit row as the owner, at `minutes` past a fixed hour, made with key `actor`
/// (or by the command line when `actor` is `None`).
async fn audit_row(
    conn: &mut AsyncPgConnection,
    minutes: i64,
    action: &str,
    actor: Option<KeyId>,
    tenant: Option<TenantId>,
) {
    let (kind, id) = match actor {
        Some(key) => ("key", key.to_string()),
        None => ("cli", "ops".to_owned()),
    };
    diesel::sql_query(
        "INSERT INTO admin_audit (at, actor_kind, actor_id, actor_name, action, tenant_id, request_id)
         VALUES ('2026-12-01T10:00:00Z'::timestamptz + make_interval(mins => $1::int), $2, $3, 'n', $4, $5::uuid, 'r')",
    )
    .bind::<BigInt, _>(minutes)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(id)
    .bind::<Text, _>(action)
    .bind::<diesel::sql_types::Nullable<Text>, _>(tenant.map(|t| t.to_string()))
    .execute(conn)
    .await
    .unwrap();
}

fn at(minutes: i64) -> chrono::DateTime<chrono::Utc> {
    "2026-12-01T10:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap() + Duration::minutes(minutes)
}

#[tokio::test]
async fn the_audit_trail_is_found_by_action_key_and_window_a_page_at_a_time_within_the_callers_scope() {
    let db = TestDatabase::create().await;
    let admin = admin(&db);
    let writer = key_caller(None, false);
    let a = admin.create_tenant(&writer, name("A"), None).await.unwrap().tenant.id;
    let b = admin.create_tenant(&writer, name("B"), None).await.unwrap().tenant.id;
    let (k1, k2) = (KeyId::generate(), KeyId::generate());
    let mut owner = db.owner().await;
    owner.batch_execute("DELETE FROM admin_audit").await.unwrap();
    for minute in 0..6 {
        audit_row(&mut owner, minute, "agent.pause", Some(k1), Some(a)).await;
    }
    audit_row(&mut owner, 10, "agent.pause", Some(k2), Some(b)).await;
    audit_row(&mut owner, 11, "agent.resume", Some(k1), Some(a)).await;
    audit_row(&mut owner, 12, "agent.pause", None, Some(a)).await;
    let page = |limit| PageRequest::<AuditCursor> { limit: PageLimit::new(limit).unwrap(), after: None };
    let minutes = |items: &[doorman_domain::AuditRecord]| -> Vec<i64> {
        items.iter().map(|r| (r.at - at(0)).num_minutes()).collect()
    };

    let pauses = AuditFilter { action: Some(AuditAction::AgentPause), ..AuditFilter::default() };
    let found = admin.audit(&writer, None, &pauses, &page(50)).await.unwrap();
    assert_eq!(minutes(&found.items), [12, 10, 5, 4, 3, 2, 1, 0]);

    let by_k1 = AuditFilter { key: Some(k1), ..AuditFilter::default() };
    let found = admin.audit(&writer, None, &by_k1, &page(50)).await.unwrap();
    assert_eq!(minutes(&found.items), [11, 5, 4, 3, 2, 1, 0], "a key's own, and not the command line's");

    // Both, in a window (since included, until not), two at a time.
    let both = AuditFilter {
        action: Some(AuditAction::AgentPause),
        key: Some(k1),
        since: Some(at(1)),
        until: Some(at(5)),
    };
    let mut request = page(2);
    let mut seen = Vec::new();
    loop {
        let found = admin.audit(&writer, None, &both, &request).await.unwrap();
        seen.extend(minutes(&found.items));
        match found.next {
            Some(next) => request.after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, [4, 3, 2, 1]);

    // A key scoped to B finds B's pauses only, whatever else matches.
    let scoped = key_caller(Some(b), true);
    let found = admin.audit(&scoped, None, &pauses, &page(50)).await.unwrap();
    assert_eq!(minutes(&found.items), [10]);
    let found = admin.audit(&writer, Some(a), &by_k1, &page(50)).await.unwrap();
    assert_eq!(found.items.len(), 7);
}

/// The trail's filters, as the adapter writes them, on a trail of 50,000 rows mostly of one
/// action by one key (a replay's entries): a rare action's or key's page reads through its
/// own index in the listing's order, not through the whole trail (no sort, no scan).
#[tokio::test]
async fn a_long_audit_trail_is_filtered_through_its_indexes() {
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    owner
        .batch_execute(
            "INSERT INTO admin_audit (at, actor_kind, actor_id, actor_name, action, tenant_id, request_id)
             SELECT now() - make_interval(secs => n), 'key',
                    CASE WHEN n % 1000 = 7 THEN md5('rare') ELSE md5('busy') END, 'n',
                    CASE WHEN n % 1000 = 0 THEN 'key.revoke' ELSE 'event.replay' END, NULL, 'r'
             FROM generate_series(1, 50000) AS n;
             ANALYZE admin_audit;",
        )
        .await
        .unwrap();
    let order = "ORDER BY at DESC, id DESC LIMIT 51";
    for (filter, index) in [
        ("action = 'key.revoke'", "admin_audit_action_newest"),
        ("actor_kind = 'key' AND actor_id = md5('rare')", "admin_audit_key_newest"),
        ("at >= now() - interval '1 hour' AND at < now()", "admin_audit_newest"),
    ] {
        #[derive(diesel::QueryableByName)]
        struct Plan {
            #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
            line: String,
        }
        let plan: Vec<Plan> =
            diesel::sql_query(format!("EXPLAIN SELECT * FROM admin_audit WHERE {filter} {order}"))
                .load(&mut owner)
                .await
                .unwrap();
        let plan: Vec<String> = plan.into_iter().map(|p| p.line).collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains(index) && !plan.contains("Sort") && !plan.contains("Seq Scan"),
            "{filter}:\n{plan}"
        );
    }
}

/// Two admin processes asking at once: each unfinished job goes to one of them, and a job
/// whose hold lapsed goes to the next that asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_job_is_taken_by_one_process_at_a_time_and_again_once_its_hold_lapses() {
    use doorman_domain::ports::ReplayJobs;
    use doorman_domain::{AuditAction, AuditEntry, ExternalEventId, NewReplayJob, ReplayJobId};

    let db = TestDatabase::create().await;
    let op = db.operator();
    let tenant = op.create_tenant("Acme").await;
    let (first, second) = (admin(&db), admin(&db));
    let caller = key_caller(None, false);
    let id = ReplayJobId::generate();
    let job = NewReplayJob {
        id,
        tenant,
        selection: "event Ev1".into(),
        requested_by: caller.clone(),
        events: vec![ExternalEventId::new("Ev1").unwrap()],
        held_until: None,
    };
    let audit = AuditEntry::new(&caller, AuditAction::EventsReplay, Some(tenant), Some("job".into()));
    first.ports().jobs().create(&job, &audit).await.unwrap();

    let soon = chrono::Utc::now() + Duration::milliseconds(600);
    let mut taken = Vec::new();
    for _ in 0..5 {
        let (a, b) = tokio::join!(first.ports().jobs().take(soon), second.ports().jobs().take(soon));
        taken.extend([a.unwrap(), b.unwrap()].into_iter().flatten());
    }
    assert_eq!(taken, [(tenant, id)], "one process, once, while its hold lasts");
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let later = chrono::Utc::now() + Duration::minutes(1);
    assert_eq!(
        second.ports().jobs().take(later).await.unwrap(),
        Some((tenant, id)),
        "taken again once it lapsed"
    );
    second.ports().jobs().finish(tenant, id).await.unwrap();
    assert_eq!(first.ports().jobs().take(later).await.unwrap(), None, "a finished job is not taken");
}

/// Support's search by event id: an id is tenant-local, so two tenants may each have one.
/// A key for every tenant finds both, each with its tenant's name; a scoped caller its own
/// only, both as the admin API reads (`doorman_admin`, row-level security) and as the command
/// line does (the owner, whom no policy holds: the statement itself must name the tenant);
/// another platform's receipt of the same id, and another id, are not found.
#[tokio::test]
async fn an_event_id_is_found_in_every_tenant_that_has_it_and_a_scoped_caller_finds_its_own() {
    use doorman_adapters::postgres::PgLedger;
    use doorman_domain::ports::Ledger;
    use doorman_domain::{ExternalEventId, Platform, ReceiptStatus};

    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b, c) = (
        tenant_with_team(&op, "TA").await,
        tenant_with_team(&op, "TB").await,
        tenant_with_team(&op, "TC").await,
    );
    let store = receipt_store(db.pool());
    store.claim(&receipt(a, "Ev0123ABCD", now())).await.unwrap();
    store.claim(&receipt(b, "Ev0123ABCD", now() - Duration::minutes(30))).await.unwrap();
    store.complete(&key(a, "Ev0123ABCD"), &delivered(now()), days_ago(7), 10).await.unwrap();
    store.claim(&receipt(c, "Ev0123ABCE", now())).await.unwrap();
    // The same id on another platform (no face writes one yet; the key allows it).
    diesel::sql_query(
        "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
         VALUES ($1, 'teams', 'Ev0123ABCD', 'message', 0, now())",
    )
    .bind::<diesel::sql_types::Uuid, _>(*c.as_uuid())
    .execute(&mut db.owner().await)
    .await
    .unwrap();

    let id = ExternalEventId::new("Ev0123ABCD").unwrap();
    let found = |tenants: Vec<doorman_domain::FoundReceipt>| -> Vec<(TenantId, String, String)> {
        tenants
            .into_iter()
            .map(|f| (f.receipt.key.tenant, f.tenant_name, f.receipt.key.external_id.to_string()))
            .collect()
    };
    let both = vec![
        (a, "tenant TA".to_owned(), "Ev0123ABCD".to_owned()),
        (b, "tenant TB".to_owned(), "Ev0123ABCD".to_owned()),
    ];
    for (face, ledger) in [
        ("admin", PgLedger::new(db.admin_pool(), None)),
        ("owner", PgLedger::new(pool::connect_as(db.url(), &PoolSettings::default(), None), None)),
    ] {
        assert_eq!(
            found(ledger.find(None, Platform::Slack, &id).await.unwrap()),
            both,
            "{face}: every tenant"
        );
        assert_eq!(
            found(ledger.find(Some(b), Platform::Slack, &id).await.unwrap()),
            vec![both[1].clone()],
            "{face}: B's only"
        );
        assert!(
            ledger.find(Some(c), Platform::Slack, &id).await.unwrap().is_empty(),
            "{face}: not C's teams one"
        );
        let other = ExternalEventId::new("Ev0123ABC").unwrap();
        assert!(
            ledger.find(None, Platform::Slack, &other).await.unwrap().is_empty(),
            "{face}: no prefix match"
        );
    }

    // Through the use case as the admin API runs it: each match's state.
    let admin = admin(&db);
    let matches = admin.find_events(&key_caller(None, true), &id).await.unwrap();
    let states: Vec<_> = matches.iter().map(|m| (m.receipt.key.tenant, m.status.as_str())).collect();
    assert_eq!(states, [(a, "handled"), (b, "stranded")]);
    let scoped = admin.find_events(&key_caller(Some(a), true), &id).await.unwrap();
    assert_eq!(scoped.len(), 1);
    assert!(matches!(scoped[0].status, ReceiptStatus::Handled { .. }));
    assert_eq!(scoped[0].receipt.key.tenant, a);
}

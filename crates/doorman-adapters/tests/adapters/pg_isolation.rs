//! Row-level security as the server sees it: connections of the server pool act as
//! `doorman_app`, and only the tenant named in the transaction is visible.

use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_adapters::postgres::PoolSettings;
use doorman_domain::TenantId;
use doorman_domain::ports::ReceiptStore;
use doorman_testkit::database::{TestDatabase, receipt_store};

use crate::fixtures::{failed, key, now, receipt, tenant_with_team};

#[derive(diesel::QueryableByName, Debug)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql).get_result::<Count>(conn).await.unwrap().n
}

async fn set_tenant(conn: &mut AsyncPgConnection, tenant: TenantId) {
    diesel::sql_query("SELECT set_config('app.tenant_id', $1, true)")
        .bind::<Text, _>(tenant.to_string())
        .execute(conn)
        .await
        .unwrap();
}

/// Two tenants with a workspace, an agent and a receipt each, whose dispatch failed once (an
/// attempt on record).
async fn two_tenants(db: &TestDatabase) -> (TenantId, TenantId) {
    let op = db.operator();
    let a = tenant_with_team(&op, "TA").await;
    let b = tenant_with_team(&op, "TB").await;
    let store = receipt_store(db.pool());
    store.claim(&receipt(a, "EvA", now())).await.unwrap();
    store.claim(&receipt(b, "EvB", now())).await.unwrap();
    store.record_failure(&key(a, "EvA"), &failed("agent answered HTTP 500", now())).await.unwrap();
    store.record_failure(&key(b, "EvB"), &failed("agent answered HTTP 500", now())).await.unwrap();
    (a, b)
}

const TABLES: [&str; 4] =
    ["messaging_event_receipts", "messaging_event_attempts", "messaging_workspaces", "agent_bridges"];

#[tokio::test]
async fn the_server_pool_acts_as_doorman_app() {
    let db = TestDatabase::create().await;
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Role {
        #[diesel(sql_type = Text)]
        current_user: String,
    }
    let role: Role =
        diesel::sql_query("SELECT current_user::text AS current_user").get_result(&mut conn).await.unwrap();
    assert_eq!(role.current_user, "doorman_app");
}

/// A login takes its role with `SET ROLE` unless it already acts as it under the policies by
/// inheritance (what Citus needs, ADR 22): a `NOINHERIT` member, a superuser and a
/// non-superuser owner of the tables take it (session and transaction pool modes alike); an
/// `INHERIT` member keeps its own name, and the policies still hold it to its tenant.
#[tokio::test]
async fn a_login_takes_its_role_unless_it_inherits_it_and_the_policies_hold_either_way() {
    let db = TestDatabase::create().await;
    let (a, _) = two_tenants(&db).await;
    let mut owner = db.owner().await;
    diesel::sql_query(
        "DO $$ BEGIN \
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'doorman_test_inheriting') THEN \
             CREATE ROLE doorman_test_inheriting LOGIN INHERIT; \
           END IF; \
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'doorman_test_owner') THEN \
             CREATE ROLE doorman_test_owner LOGIN NOSUPERUSER INHERIT; \
           END IF; \
         END $$",
    )
    .execute(&mut owner)
    .await
    .unwrap();
    diesel::sql_query("GRANT doorman_app TO doorman_test_inheriting, doorman_test_owner")
        .execute(&mut owner)
        .await
        .unwrap();
    for table in ["tenants", "messaging_event_receipts", "messaging_workspaces", "agent_bridges"] {
        diesel::sql_query(format!("ALTER TABLE {table} OWNER TO doorman_test_owner"))
            .execute(&mut owner)
            .await
            .unwrap();
    }
    #[derive(diesel::QueryableByName)]
    struct Seen {
        #[diesel(sql_type = Text)]
        acting: String,
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    for mode in [
        doorman_adapters::postgres::pool::PoolMode::Session,
        doorman_adapters::postgres::pool::PoolMode::Transaction,
    ] {
        for (login, acting) in [
            (doorman_testkit::database::SERVER_ROLE, "doorman_app"),
            ("postgres", "doorman_app"),
            ("doorman_test_owner", "doorman_app"),
            ("doorman_test_inheriting", "doorman_test_inheriting"),
        ] {
            let url = doorman_testkit::database::with_user(db.url(), login);
            let pool = doorman_adapters::postgres::pool::connect(
                &url,
                &PoolSettings { mode, ..PoolSettings::default() },
            );
            let mut unit = pool.unit().await.unwrap();
            let seen: Seen = unit
                .transaction::<_, diesel::result::Error, _>(async |conn| {
                    set_tenant(conn, a).await;
                    diesel::sql_query(
                        "SELECT current_user::text AS acting, (SELECT count(*) FROM messaging_event_receipts) AS n",
                    )
                    .get_result(conn)
                    .await
                })
                .await
                .unwrap();
            unit.finish(Ok::<_, doorman_domain::StorageError>(())).await.unwrap();
            assert_eq!((seen.acting.as_str(), seen.n), (acting, 1), "{login} in {mode:?} mode");
        }
    }
}

#[tokio::test]
async fn another_tenants_rows_are_invisible_and_its_receipts_unchangeable() {
    let db = TestDatabase::create().await;
    let (a, b) = two_tenants(&db).await;
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();

    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        set_tenant(conn, a).await;
        for table in TABLES {
            let mine = count(conn, &format!("SELECT count(*) AS n FROM {table}")).await;
            assert_eq!(mine, 1, "{table}: only tenant A's row is visible");
            let theirs =
                count(conn, &format!("SELECT count(*) AS n FROM {table} WHERE tenant_id = '{b}'")).await;
            assert_eq!(theirs, 0, "{table}: tenant B's rows are invisible");
        }
        // Receipts are written by the server, so row-level security is what keeps B's safe.
        let table = "messaging_event_receipts";
        let updated =
            diesel::sql_query(format!("UPDATE {table} SET tenant_id = tenant_id WHERE tenant_id = '{b}'"))
                .execute(conn)
                .await?;
        assert_eq!(updated, 0, "tenant B's receipts cannot be updated");
        let deleted =
            diesel::sql_query(format!("DELETE FROM {table} WHERE tenant_id = '{b}'")).execute(conn).await?;
        assert_eq!(deleted, 0, "tenant B's receipts cannot be deleted");
        Ok(())
    })
    .await
    .unwrap();

    // Nothing of B's changed, seen by the owner.
    let mut owner = db.owner().await;
    for table in TABLES {
        assert_eq!(
            count(&mut owner, &format!("SELECT count(*) AS n FROM {table} WHERE tenant_id = '{b}'")).await,
            1
        );
    }
}

#[tokio::test]
async fn writing_a_receipt_for_another_tenant_is_refused_by_row_level_security() {
    let db = TestDatabase::create().await;
    let (a, b) = two_tenants(&db).await;
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();

    let writes = [
        format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{b}', 'slack', 'EvForged', 'message', 0, now())"
        ),
        format!("UPDATE messaging_event_receipts SET tenant_id = '{b}' WHERE tenant_id = '{a}'"),
    ];
    for sql in writes {
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                set_tenant(conn, a).await;
                diesel::sql_query(sql.as_str()).execute(conn).await
            })
            .await;
        let error = result.expect_err("writing a receipt for another tenant must fail");
        assert!(error.to_string().contains("row-level security"), "{sql}: {error}");
    }
}

/// The batch functions name all their tenants at once (`app.tenant_ids`): a row of a tenant in
/// the list is visible and writable, one of a tenant outside it is neither.
#[tokio::test]
async fn a_batch_sees_and_writes_only_the_tenants_it_names() {
    let db = TestDatabase::create().await;
    let (a, b) = two_tenants(&db).await;
    let c = tenant_with_team(&db.operator(), "TC").await;
    receipt_store(db.pool()).claim(&receipt(c, "EvC", now())).await.unwrap();
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();

    let forged = conn
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query("SELECT set_config('app.tenant_ids', $1, true)")
                .bind::<Text, _>(format!("{{{a},{b}}}"))
                .execute(conn)
                .await?;
            let visible = count(conn, "SELECT count(*) AS n FROM messaging_event_receipts").await;
            assert_eq!(visible, 2, "A's and B's receipts, not C's");
            let touched = diesel::sql_query(format!(
                "UPDATE messaging_event_receipts SET event_type = event_type WHERE tenant_id = '{c}'"
            ))
            .execute(conn)
            .await?;
            assert_eq!(touched, 0, "C's receipts cannot be updated");
            diesel::sql_query(format!(
                "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
                 VALUES ('{c}', 'slack', 'EvForged', 'message', 0, now())"
            ))
            .execute(conn)
            .await
        })
        .await;
    let error = forged.expect_err("writing a receipt for a tenant outside the list must fail");
    assert!(error.to_string().contains("row-level security"), "{error}");
}

#[tokio::test]
async fn the_server_cannot_write_the_directory_even_for_its_own_tenant() {
    let db = TestDatabase::create().await;
    let (a, _) = two_tenants(&db).await;
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();
    let writes = [
        format!(
            "INSERT INTO tenants (id, name) VALUES ('{}', 'forged')",
            doorman_domain::TenantId::generate()
        ),
        format!("UPDATE tenants SET name = 'renamed' WHERE id = '{a}'"),
        format!(
            "INSERT INTO messaging_workspaces (tenant_id, platform, team_id) VALUES ('{a}', 'slack', 'TForged')"
        ),
        format!("DELETE FROM messaging_workspaces WHERE tenant_id = '{a}'"),
        format!("UPDATE agent_bridges SET paused = true WHERE tenant_id = '{a}'"),
        format!("DELETE FROM agent_bridges WHERE tenant_id = '{a}'"),
    ];
    for sql in writes {
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                set_tenant(conn, a).await;
                diesel::sql_query(sql.as_str()).execute(conn).await
            })
            .await;
        let error = result.expect_err("the server's role has no write grant on the directory");
        assert!(error.to_string().contains("permission denied"), "{sql}: {error}");
    }
}

#[tokio::test]
async fn the_server_login_gains_nothing_by_leaving_doorman_app() {
    let db = TestDatabase::create().await;
    two_tenants(&db).await;
    // The login itself, without the pool's SET ROLE (as RESET ROLE would leave it).
    let mut login = AsyncPgConnection::establish(&db.server_url()).await.unwrap();
    for sql in ["SELECT count(*) AS n FROM messaging_event_receipts", "SELECT count(*) AS n FROM tenants"] {
        let error = diesel::sql_query(sql).get_result::<Count>(&mut login).await.unwrap_err();
        assert!(error.to_string().contains("permission denied"), "{sql}: {error}");
    }
}

#[tokio::test]
async fn the_hot_path_functions_give_back_the_callers_tenant() {
    let db = TestDatabase::create().await;
    let (a, _) = two_tenants(&db).await;
    let pool = db.pool();
    let mut conn = pool.unit().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = Text)]
        tenant: String,
    }
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        set_tenant(conn, a).await;
        // Tenant B's workspace: the function names B inside, then hands A back.
        diesel::sql_query("SELECT * FROM doorman_resolve('slack', 'TB', NULL)").execute(conn).await?;
        let after: Setting = diesel::sql_query("SELECT current_setting('app.tenant_id', true) AS tenant")
            .get_result(conn)
            .await?;
        assert_eq!(after.tenant, a.to_string());
        Ok(())
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn with_no_tenant_set_nothing_is_visible_even_after_a_tenant_transaction() {
    let db = TestDatabase::create().await;
    let (a, _) = two_tenants(&db).await;
    // One connection, so the second query runs on the session the first transaction used.
    let pool = db.pool_with(&PoolSettings { max_size: 1, ..Default::default() });
    let mut conn = pool.unit().await.unwrap();

    for table in TABLES {
        assert_eq!(count(&mut conn, &format!("SELECT count(*) AS n FROM {table}")).await, 0, "{table}");
    }
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        set_tenant(conn, a).await;
        assert_eq!(count(conn, "SELECT count(*) AS n FROM messaging_event_receipts").await, 1);
        Ok(())
    })
    .await
    .unwrap();
    // The setting reads '' now, not NULL: the policies must still answer "nothing", not fail.
    for table in TABLES {
        assert_eq!(count(&mut conn, &format!("SELECT count(*) AS n FROM {table}")).await, 0, "{table}");
    }
}

/// A replay's outcome is written under the one tenant its caller acts for: what today's admin
/// calls writes nothing of another tenant. (The admin role may still execute the server's batch
/// function, which names the tenants of its own rows, for one release: the previous release's
/// admin records replays' outcomes through it, migration 2026-12-06-000003.)
#[tokio::test]
async fn the_admin_role_writes_a_replays_outcome_only_for_the_tenant_it_acts_for() {
    let db = TestDatabase::create().await;
    let (a, b) = two_tenants(&db).await;
    receipt_store(db.pool()).claim(&receipt(b, "EvB", now())).await.unwrap();
    let mut admin = diesel_async::AsyncPgConnection::establish(&db.admin_url()).await.unwrap();
    // As the admin API's pool has it.
    diesel::sql_query("SET ROLE doorman_admin").execute(&mut admin).await.unwrap();

    let written = admin
        .transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::sql_query("SELECT set_config('app.tenant_id', $1, true)")
                .bind::<Text, _>(a.to_string())
                .execute(conn)
                .await?;
            diesel::sql_query(format!(
                "SELECT doorman_write_outcomes(ARRAY['{b}'::uuid], ARRAY['slack'], ARRAY['EvB'], ARRAY[now()], \
                 ARRAY[NULL::text], ARRAY[NULL::timestamptz])"
            ))
            .execute(conn)
            .await
        })
        .await;
    assert!(written.is_ok(), "{written:?}");
    let mut owner = db.owner().await;
    let handled = count(
        &mut owner,
        "SELECT count(*) AS n FROM messaging_event_receipts WHERE external_event_id = 'EvB' AND handled_at IS NOT NULL",
    )
    .await;
    assert_eq!(handled, 0, "acting for A, the admin role cannot mark B's receipt handled");
}

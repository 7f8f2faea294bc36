//! What the server says, classified: waiting fixes a deadlock, a lock or statement timeout, a
//! cancel and a terminated connection (`Unavailable`: 503, retried); it does not fix a broken
//! constraint (`Unexpected`: 500).

use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use doorman_adapters::postgres::errors::from_diesel;
use doorman_domain::StorageError;
use doorman_testkit::database::TestDatabase;

async fn connect(db: &TestDatabase) -> AsyncPgConnection {
    AsyncPgConnection::establish(db.url()).await.unwrap()
}

async fn pid(conn: &mut AsyncPgConnection) -> i32 {
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    diesel::sql_query("SELECT pg_backend_pid() AS pid").get_result::<Pid>(conn).await.unwrap().pid
}

fn transient(error: DieselError, what: &str) {
    match from_diesel(error) {
        StorageError::Unavailable(message) => assert!(!message.is_empty(), "{what}"),
        other => panic!("{what} should be worth retrying: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_cancels_deadlocks_and_terminations_are_worth_retrying() {
    let db = TestDatabase::create().await;
    let mut setup = connect(&db).await;
    setup.batch_execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2)").await.unwrap();

    let mut a = connect(&db).await;
    a.batch_execute("SET statement_timeout = 50").await.unwrap();
    transient(
        diesel::sql_query("SELECT pg_sleep(1)").execute(&mut a).await.unwrap_err(),
        "statement timeout",
    );
    a.batch_execute("SET statement_timeout = 0").await.unwrap();

    // A lock held by another transaction: lock timeout, then NOWAIT.
    let mut holder = connect(&db).await;
    holder.batch_execute("BEGIN; SELECT * FROM t WHERE id = 1 FOR UPDATE").await.unwrap();
    a.batch_execute("SET lock_timeout = 50").await.unwrap();
    transient(
        diesel::sql_query("UPDATE t SET id = id WHERE id = 1").execute(&mut a).await.unwrap_err(),
        "lock timeout",
    );
    transient(
        diesel::sql_query("SELECT * FROM t WHERE id = 1 FOR UPDATE NOWAIT")
            .execute(&mut a)
            .await
            .unwrap_err(),
        "NOWAIT",
    );
    a.batch_execute("SET lock_timeout = 0").await.unwrap();

    // A deadlock: each holds one row and wants the other's.
    a.batch_execute("BEGIN; SELECT * FROM t WHERE id = 2 FOR UPDATE").await.unwrap();
    let (first, second) =
        tokio::join!(diesel::sql_query("SELECT * FROM t WHERE id = 1 FOR UPDATE").execute(&mut a), async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            diesel::sql_query("SELECT * FROM t WHERE id = 2 FOR UPDATE").execute(&mut holder).await
        });
    let lost = first.err().or(second.err()).expect("one of them is chosen as the deadlock's victim");
    transient(lost, "deadlock");
    let _ = a.batch_execute("ROLLBACK").await;
    let _ = holder.batch_execute("ROLLBACK").await;

    // Cancelled by an operator, and terminated by one.
    let target = pid(&mut a).await;
    let (slept, _) = tokio::join!(diesel::sql_query("SELECT pg_sleep(5)").execute(&mut a), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        setup.batch_execute(&format!("SELECT pg_cancel_backend({target})")).await.unwrap();
    });
    transient(slept.unwrap_err(), "cancel");
    let (slept, _) = tokio::join!(diesel::sql_query("SELECT pg_sleep(5)").execute(&mut a), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        setup.batch_execute(&format!("SELECT pg_terminate_backend({target})")).await.unwrap();
    });
    transient(slept.unwrap_err(), "administrator command");
}

#[tokio::test]
async fn a_broken_constraint_is_unexpected_not_an_outage() {
    let db = TestDatabase::create().await;
    let mut conn = connect(&db).await;
    conn.batch_execute("CREATE TABLE t (id int PRIMARY KEY CHECK (id > 0))").await.unwrap();
    for bad in ["INSERT INTO t VALUES (-1)", "SELECT no_such_column FROM t"] {
        let error = diesel::sql_query(bad).execute(&mut conn).await.unwrap_err();
        assert!(matches!(from_diesel(error), StorageError::Unexpected(_)), "{bad}");
    }
}

/// PostgreSQL answering a login in German (`lc_messages = 'de_DE.UTF-8'`). diesel-async keeps
/// the SQLSTATE to itself, and what waiting fixes is partly told by the message's English
/// words; so the login check says what it found: a login that may not set `lc_messages` gets a
/// warning naming the consequence and the fix, one that may has its pools' sessions set it to
/// `C`, and then a lock timeout is still `Unavailable` (503), not a bug (500).
#[tokio::test(flavor = "multi_thread")]
async fn a_login_answered_in_german_meets_a_lock_timeout_as_unavailable() {
    use doorman_adapters::postgres::connect::SessionLimits;
    use doorman_adapters::postgres::login::{Login, check};
    use doorman_adapters::postgres::{PgTenantDirectory, PoolSettings, pool};
    use doorman_domain::ports::TenantDirectory;
    use doorman_testkit::database::{MESSAGES_ROLE, SERVER_ROLE, test_keys};

    let db = TestDatabase::create().await;
    for login in [SERVER_ROLE, MESSAGES_ROLE] {
        db.messages_in_german(login).await;
    }
    let checked = |login: &'static str| {
        let url = db.url_as(login);
        async move {
            match check(&url, "doorman_app").await {
                Ok(Login::Ready { warnings, c_messages, .. }) => (warnings, c_messages),
                other => panic!("{login}: {other:?}"),
            }
        }
    };
    let (warnings, c_messages) = checked(SERVER_ROLE).await;
    assert!(!c_messages);
    assert!(
        warnings.iter().any(|w| w.contains("lc_messages = \"de_DE.UTF-8\"")
            && w.contains("answered 500 instead of 503")
            && w.contains("ALTER ROLE \"doorman_test_server\" SET lc_messages = 'C'")),
        "{warnings:?}"
    );
    let (warnings, c_messages) = checked(MESSAGES_ROLE).await;
    assert!(c_messages && warnings.is_empty(), "{warnings:?}");

    let limits = SessionLimits { lock: std::time::Duration::from_millis(100), ..SessionLimits::default() };
    let pool =
        pool::connect(&db.url_as(MESSAGES_ROLE), &PoolSettings { c_messages, limits, ..Default::default() });
    let directory = PgTenantDirectory::new(pool, std::sync::Arc::new(test_keys()));
    let mut holder = connect(&db).await;
    holder.batch_execute("BEGIN; LOCK TABLE messaging_workspaces IN ACCESS EXCLUSIVE MODE").await.unwrap();
    let team = doorman_domain::WorkspaceRef::team(doorman_domain::WorkspaceId::new("T1").unwrap());
    let resolved = directory.resolve(doorman_domain::Platform::Slack, &team).await;
    assert!(matches!(resolved, Err(StorageError::Unavailable(_))), "a lock timeout: {resolved:?}");
    holder.batch_execute("ROLLBACK").await.unwrap();
}

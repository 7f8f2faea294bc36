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

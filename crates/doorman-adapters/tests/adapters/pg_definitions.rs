//! The SQL defined once (ADR 23): a migrated database holds exactly the functions, triggers and
//! policies of `postgres/sql/`, each from its one file, and `doorman migrate` applies them again
//! harmlessly. (The Citus forms: crates/doorman-app/tests/e2e/citus.rs.)

use doorman_adapters::postgres::definitions::Form;
use doorman_adapters::postgres::migrations;
use doorman_testkit::database::TestDatabase;
use doorman_testkit::{definitions, schema};

#[tokio::test]
async fn every_function_trigger_and_policy_of_a_migrated_database_comes_from_its_one_file() {
    let db = TestDatabase::create().await;
    let differences = definitions::differences(db.url(), Form::Plain).await;
    assert!(differences.is_empty(), "the database and postgres/sql/ disagree:\n{}", differences.join("\n"));
    // And the check sees a difference when there is one: a function defined otherwise, one
    // from no file, a policy not stamped by its file.
    diesel_async::SimpleAsyncConnection::batch_execute(
        &mut db.owner().await,
        "CREATE OR REPLACE FUNCTION public.doorman_sweep_watermark() RETURNS timestamptz \
             LANGUAGE sql AS $$ SELECT now() $$; \
             CREATE FUNCTION public.doorman_stray() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$; \
             COMMENT ON POLICY tenant_isolation ON tenants IS NULL",
    )
    .await
    .unwrap();
    let differences = definitions::differences(db.url(), Form::Plain).await;
    assert_eq!(differences.len(), 3, "{differences:#?}");
    for (found, what) in differences.iter().zip([
        "function doorman_stray on public: from no file",
        "function doorman_sweep_watermark on public: defined otherwise",
        "policy tenant_isolation on tenants: defined otherwise",
    ]) {
        assert!(found.starts_with(what), "{found} (expected {what})");
    }
}

/// `doorman migrate` on a database that has every migration re-applies the definitions and
/// changes nothing; on one the previous release migrated (migrations only, no stamps) it
/// gives the schema a fresh `doorman migrate` gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_again_changes_nothing_and_brings_an_earlier_database_to_the_same_schema() {
    let db = TestDatabase::create().await;
    let fresh = schema::dump(db.url());
    assert_eq!(migrations::run_pending(db.url()).await.unwrap(), Vec::<String>::new());
    let again = schema::dump(db.url());
    assert!(again == fresh, "migrate again: {}", schema::first_difference(&fresh, &again));

    let earlier = TestDatabase::create_empty().await;
    while doorman_testkit::migrations::run_next(earlier.url()).await.unwrap().is_some() {}
    assert!(
        !definitions::differences(earlier.url(), Form::Plain).await.is_empty(),
        "the migrations alone leave the policies unstamped"
    );
    migrations::run_pending(earlier.url()).await.unwrap();
    let upgraded = schema::dump(earlier.url());
    assert!(upgraded == fresh, "upgraded: {}", schema::first_difference(&fresh, &upgraded));
    let differences = definitions::differences(earlier.url(), Form::Plain).await;
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// An older release's `doorman migrate` on a database a newer release migrated (a rollback, an
/// old process's migrate step restarting) leaves the newer release's definitions as they are;
/// without the newer migration the same change is put back to the file's form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_leaves_a_newer_releases_definitions_alone() {
    const NEWER_BODY: &str = "CREATE OR REPLACE FUNCTION public.doorman_sealed_key_id(p_value text) RETURNS text \
         LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'newer' $$";
    let body = |db: &TestDatabase| {
        let url = db.url().to_owned();
        async move {
            #[derive(diesel::QueryableByName)]
            struct Body {
                #[diesel(sql_type = diesel::sql_types::Text)]
                prosrc: String,
            }
            let mut conn =
                <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&url)
                    .await
                    .unwrap();
            let found: Body = diesel_async::RunQueryDsl::get_result(
                diesel::sql_query("SELECT prosrc FROM pg_proc WHERE proname = 'doorman_sealed_key_id'"),
                &mut conn,
            )
            .await
            .unwrap();
            found.prosrc
        }
    };
    let db = TestDatabase::create().await;
    let mut owner = db.owner().await;
    diesel_async::SimpleAsyncConnection::batch_execute(&mut owner, NEWER_BODY).await.unwrap();
    migrations::run_pending(db.url()).await.unwrap();
    assert!(!body(&db).await.contains("newer"), "no newer release: the file's form is put back");

    diesel_async::SimpleAsyncConnection::batch_execute(
        &mut owner,
        &format!("{NEWER_BODY}; INSERT INTO __diesel_schema_migrations (version) VALUES ('29991231000001')"),
    )
    .await
    .unwrap();
    assert_eq!(migrations::run_pending(db.url()).await.unwrap(), Vec::<String>::new());
    assert!(body(&db).await.contains("'newer'"), "a newer release's definition stays");
}

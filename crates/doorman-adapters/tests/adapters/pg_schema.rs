//! The schema itself: the SECURITY DEFINER allowlist, reversible migrations, and
//! `schema.rs` equal to what the migrations build.

use diesel::sql_types::{Oid, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use doorman_adapters::postgres::migrations;
use doorman_adapters::postgres::security::SECURITY_DEFINER_ALLOWLIST;
use doorman_testkit::database::TestDatabase;

#[derive(diesel::QueryableByName, Debug)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

async fn names(conn: &mut AsyncPgConnection, sql: &str) -> Vec<String> {
    diesel::sql_query(sql).load::<Name>(conn).await.unwrap().into_iter().map(|n| n.name).collect()
}

#[tokio::test]
async fn only_allowlisted_functions_are_security_definer() {
    let db = TestDatabase::create().await;
    let found = names(
        &mut db.owner().await,
        "SELECT p.proname::text AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    )
    .await;
    assert_eq!(found, SECURITY_DEFINER_ALLOWLIST);

    // And each pins its search_path, so a caller cannot shadow what it reads.
    let unpinned = names(
        &mut db.owner().await,
        "SELECT p.proname::text AS name FROM pg_proc p WHERE p.prosecdef \
         AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')",
    )
    .await;
    assert!(unpinned.is_empty(), "SECURITY DEFINER without a pinned search_path: {unpinned:?}");
}

const PUBLIC_TABLES: &str = "SELECT table_name::text AS name FROM information_schema.tables \
     WHERE table_schema = 'public' AND table_type = 'BASE TABLE' \
       AND table_name <> '__diesel_schema_migrations' ORDER BY 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_down_and_up_again_cleanly() {
    let db = TestDatabase::create().await;
    let before = names(&mut db.owner().await, PUBLIC_TABLES).await;
    assert_eq!(before.len(), 12);

    let reverted = doorman_testkit::migrations::revert_all(db.url()).await.unwrap();
    assert_eq!(reverted.len(), migrations::embedded_count());
    assert!(names(&mut db.owner().await, PUBLIC_TABLES).await.is_empty());

    let applied = migrations::run_pending(db.url()).await.unwrap();
    assert_eq!(applied.len(), migrations::embedded_count());
    assert_eq!(names(&mut db.owner().await, PUBLIC_TABLES).await, before);
    assert!(doorman_testkit::migrations::pending(db.url()).await.unwrap().is_empty());
}

#[derive(diesel::QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    column_name: String,
    #[diesel(sql_type = Text)]
    udt_name: String,
    #[diesel(sql_type = Text)]
    is_nullable: String,
}

#[derive(diesel::QueryableByName)]
struct ForeignKey {
    #[diesel(sql_type = Text)]
    child: String,
    #[diesel(sql_type = Text)]
    parent: String,
    #[diesel(sql_type = Text)]
    column_name: String,
}

#[derive(diesel::QueryableByName)]
struct TableOid {
    #[diesel(sql_type = Oid)]
    oid: u32,
}

/// Renders the migrated database the way `diesel print-schema` does (for the types this
/// schema uses), so a migration changed without regenerating `schema.rs` fails here. With
/// `DOORMAN_WRITE_SCHEMA_RS` set it writes the file instead (`just schema`): no Diesel CLI
/// needed.
#[tokio::test]
async fn schema_rs_matches_the_migrated_database() {
    let db = TestDatabase::create().await;
    let mut conn = db.owner().await;
    let mut out = String::from("// @generated automatically by Diesel CLI.\n");
    let tables = names(&mut conn, PUBLIC_TABLES).await;
    for table in &tables {
        let oid: TableOid = diesel::sql_query("SELECT $1::regclass::oid AS oid")
            .bind::<Text, _>(table)
            .get_result(&mut conn)
            .await
            .unwrap();
        let key = diesel::sql_query(
            "SELECT a.attname::text AS name FROM pg_index i \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
             WHERE i.indrelid = $1 AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)",
        )
        .bind::<Oid, _>(oid.oid)
        .load::<Name>(&mut conn)
        .await
        .unwrap();
        let key: Vec<String> = key.into_iter().map(|n| n.name).collect();
        out += &format!("\ndiesel::table! {{\n    {table} ({}) {{\n", key.join(", "));
        let columns: Vec<Column> = diesel::sql_query(
            "SELECT column_name::text, udt_name::text, is_nullable::text FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind::<Text, _>(table)
        .load(&mut conn)
        .await
        .unwrap();
        for c in columns {
            let ty = match c.udt_name.as_str() {
                "uuid" => "Uuid",
                "text" => "Text",
                "bool" => "Bool",
                "int4" => "Int4",
                "int8" => "Int8",
                "timestamptz" => "Timestamptz",
                other => panic!("extend this test for column type {other}"),
            };
            let ty = if c.is_nullable == "YES" { format!("Nullable<{ty}>") } else { ty.to_owned() };
            out += &format!("        {} -> {ty},\n", c.column_name);
        }
        out += "    }\n}\n";
    }
    let fks: Vec<ForeignKey> = diesel::sql_query(
        "SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent, a.attname::text AS column_name \
         FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] \
         WHERE c.contype = 'f' AND array_length(c.conkey, 1) = 1 ORDER BY 1, 2",
    )
    .load(&mut conn)
    .await
    .unwrap();
    out += "\n";
    for fk in fks {
        out += &format!("diesel::joinable!({} -> {} ({}));\n", fk.child, fk.parent, fk.column_name);
    }
    out += "\ndiesel::allow_tables_to_appear_in_same_query!(\n";
    for table in &tables {
        out += &format!("    {table},\n");
    }
    out += ");\n";

    // `just schema` regenerates the file with this very rendering.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/postgres/schema.rs");
    if std::env::var_os("DOORMAN_WRITE_SCHEMA_RS").is_some() {
        std::fs::write(path, &out).unwrap();
    }
    let file = std::fs::read_to_string(path).unwrap();
    assert_eq!(file, out, "schema.rs differs from the migrated database: run `just schema`");
}

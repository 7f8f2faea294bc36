//! Whether a migrated database holds exactly what the SQL definitions' files say (ADR 23): every
//! function, trigger and policy comes from one file, in the form (plain or Citus) the database
//! should have, and nothing else is there.

use diesel::sql_types::{Nullable, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_adapters::postgres::definitions::{DEFINITIONS, Form, Kind, functions_of, policies_of, stamp};

#[derive(diesel::QueryableByName, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Found {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    place: String,
    #[diesel(sql_type = Nullable<Text>)]
    detail: Option<String>,
}

/// What differs between the database at `database_url` (connected as its owner) and the files
/// in `form`: one line per function, trigger or policy found without its file, defined
/// otherwise than its file says, or missing. Empty when they agree.
pub async fn differences(database_url: &str, form: Form) -> Vec<String> {
    let mut conn = AsyncPgConnection::establish(database_url).await.expect("connect as the owner");
    let mut load = async |sql: &str| -> Vec<Found> {
        let mut found: Vec<Found> = diesel::sql_query(sql).load(&mut conn).await.expect(sql);
        found.sort();
        found
    };
    // Functions: name, and body (pg_proc.prosrc, exactly the text between the dollar quotes).
    // Functions an extension (Citus) brought are not Doorman's.
    let functions = load(
        "SELECT p.proname::text AS name, 'public' AS place, p.prosrc AS detail \
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
          WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'citus%' \
            AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')",
    )
    .await;
    // Triggers: name, table, and the function they execute.
    let triggers = load(
        "SELECT t.tgname::text AS name, c.relname::text AS place, t.tgfoid::regproc::text AS detail \
           FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
           JOIN pg_proc f ON f.oid = t.tgfoid \
          WHERE n.nspname = 'public' AND NOT t.tgisinternal \
            AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = f.oid AND d.deptype = 'e')",
    )
    .await;
    // Policies: name, table, and the stamp of the file that defined them.
    let policies = load(
        "SELECT p.polname::text AS name, c.relname::text AS place, obj_description(p.oid, 'pg_policy') AS detail \
           FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
          WHERE n.nspname = 'public'",
    )
    .await;

    let mut expected_functions = Vec::new();
    let mut expected_triggers = Vec::new();
    let mut expected_policies = Vec::new();
    for definition in DEFINITIONS {
        let sql = definition.sql(form);
        match definition.kind {
            Kind::Function => {
                for (name, body) in functions_of(sql) {
                    expected_functions.push(Found { name, place: "public".into(), detail: Some(body) });
                }
            }
            Kind::Trigger => {
                for line in sql.lines().filter(|l| l.starts_with("CREATE OR REPLACE TRIGGER ")) {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let table = words.iter().skip_while(|w| **w != "ON").nth(1).copied().unwrap_or_default();
                    let statement = &sql[sql.find(line).unwrap_or(0)..];
                    let function = statement
                        .split("EXECUTE FUNCTION ")
                        .nth(1)
                        .and_then(|rest| rest.split('(').next())
                        .unwrap_or_default();
                    expected_triggers.push(Found {
                        name: words[4].to_owned(),
                        place: table.trim_start_matches("public.").to_owned(),
                        // regproc prints the name unqualified when public is on the search path.
                        detail: Some(function.trim_start_matches("public.").to_owned()),
                    });
                }
            }
            Kind::Policy => {
                let stamp = stamp(definition, form);
                for (name, table) in policies_of(sql) {
                    expected_policies.push(Found { name, place: table, detail: Some(stamp.clone()) });
                }
            }
        }
    }
    let mut out = Vec::new();
    // A signature left behind (a file's function given other arguments without a migration
    // dropping the old ones) keeps a body a file has, so the comparison below cannot see it:
    // each name must have as many signatures in the database as in its file.
    let mut names: Vec<&str> = expected_functions.iter().map(|e| e.name.as_str()).collect();
    names.dedup();
    for name in names {
        let in_file = expected_functions.iter().filter(|e| e.name == name).count();
        let in_database = functions.iter().filter(|f| f.name == name).count();
        if in_file != in_database {
            out.push(format!(
                "function {name} on public: {in_database} signatures in the database, {in_file} in its file"
            ));
        }
    }
    for (what, mut expected, found) in [
        ("function", expected_functions, functions),
        ("trigger", expected_triggers, triggers),
        ("policy", expected_policies, policies),
    ] {
        expected.sort();
        for f in found.iter().filter(|f| !expected.contains(f)) {
            let file = if expected.iter().any(|e| e.name == f.name && e.place == f.place) {
                "defined otherwise than its file says"
            } else {
                "from no file"
            };
            out.push(format!("{what} {} on {}: {file}: {:?}", f.name, f.place, f.detail));
        }
        for e in expected.iter().filter(|e| !found.contains(e)) {
            if !found.iter().any(|f| f.name == e.name && f.place == e.place) {
                out.push(format!("{what} {} on {}: in its file, not in the database", e.name, e.place));
            }
        }
    }
    out
}

//! The SQL defined once (ADR 23): every function, trigger and policy Doorman's database holds
//! has one file under `postgres/sql/` that defines its current form, and `doorman migrate`
//! applies them all after the migrations, under the same advisory lock, every time (the pattern
//! Flyway calls repeatable migrations). The versioned migrations change tables, indexes and
//! grants; to change a function, a trigger or a policy, change its file.
//!
//! - `functions/<name>.sql`: every signature of the function `<name>`, as
//!   `CREATE OR REPLACE FUNCTION` (a signature the previous release calls stays in the file until
//!   the release after: expand, then contract). Grants stay in the migrations: a replaced
//!   function keeps its owner and grants.
//! - `triggers/<name>.sql`: the trigger `<name>` on each table it is on, as
//!   `CREATE OR REPLACE TRIGGER`.
//! - `policies/<table>.sql`: every row-level security policy of `<table>`, as
//!   `DROP POLICY IF EXISTS` then `CREATE POLICY`, in one transaction. A policy cannot be
//!   replaced without a lock that stops every reader of its table, so each policy carries its
//!   file's [`stamp`] as its comment and a file whose stamp every policy of the table already
//!   carries is not applied again.
//! - `<name>.citus.sql` beside a file: the form a Citus database gets instead ([`Form::Citus`]),
//!   only where Citus needs another; its first line says why (`-- Why Citus has its own form`).
//!
//! Which form a database gets depends only on whether it has the `citus` extension, decided by
//! the caller ([`super::migrations::run_pending`]) before anything is applied.

use diesel::Connection;
use diesel::connection::SimpleConnection;
use diesel::sql_types::{BigInt, Text};

use super::sync_pg::{MigrationError, SyncPg, statements};

/// What a file defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Function,
    Trigger,
    Policy,
}

/// Which of a file's forms a database gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// One PostgreSQL.
    Plain,
    /// A Citus coordinator: the `.citus.sql` file where there is one.
    Citus,
}

/// One file under `postgres/sql/` (and its Citus form, when it has one).
#[derive(Debug, Clone, Copy)]
pub struct Definition {
    pub kind: Kind,
    /// The function's or trigger's name; for policies, the table's.
    pub name: &'static str,
    /// The file's path under `postgres/sql/`, without `.sql`.
    pub path: &'static str,
    pub plain: &'static str,
    pub citus: Option<&'static str>,
}

impl Definition {
    /// The SQL `form` gets.
    pub fn sql(&self, form: Form) -> &'static str {
        match form {
            Form::Citus => self.citus.unwrap_or(self.plain),
            Form::Plain => self.plain,
        }
    }

    /// The file `form` gets, under `postgres/sql/`.
    pub fn file(&self, form: Form) -> String {
        match (form, self.citus) {
            (Form::Citus, Some(_)) => format!("{}.citus.sql", self.path),
            _ => format!("{}.sql", self.path),
        }
    }
}

macro_rules! definition {
    ($kind:ident, $dir:literal, $name:literal) => {
        Definition {
            kind: Kind::$kind,
            name: $name,
            path: concat!($dir, "/", $name),
            plain: include_str!(concat!("sql/", $dir, "/", $name, ".sql")),
            citus: None,
        }
    };
    ($kind:ident, $dir:literal, $name:literal, citus) => {
        Definition {
            kind: Kind::$kind,
            name: $name,
            path: concat!($dir, "/", $name),
            plain: include_str!(concat!("sql/", $dir, "/", $name, ".sql")),
            citus: Some(include_str!(concat!("sql/", $dir, "/", $name, ".citus.sql"))),
        }
    };
}

/// Every file, in the order they are applied: functions (by name), then triggers (which call
/// them), then policies. A test checks the list against the folder.
pub const DEFINITIONS: &[Definition] = &[
    definition!(Function, "functions", "doorman_add_activity"),
    definition!(Function, "functions", "doorman_claim_receipts", citus),
    definition!(Function, "functions", "doorman_claim_requests", citus),
    definition!(Function, "functions", "doorman_disable_failing_agents"),
    definition!(Function, "functions", "doorman_hold_shards", citus),
    definition!(Function, "functions", "doorman_install_link"),
    definition!(Function, "functions", "doorman_is_stranded"),
    definition!(Function, "functions", "doorman_link_named"),
    definition!(Function, "functions", "doorman_link_taken"),
    definition!(Function, "functions", "doorman_notify_tenant_change"),
    definition!(Function, "functions", "doorman_notify_workspace_change"),
    definition!(Function, "functions", "doorman_prune_expired_receipts"),
    definition!(Function, "functions", "doorman_receipt_counts"),
    definition!(Function, "functions", "doorman_record_installation"),
    definition!(Function, "functions", "doorman_record_outcomes"),
    definition!(Function, "functions", "doorman_redelivery_tenants"),
    definition!(Function, "functions", "doorman_remove_installation"),
    definition!(Function, "functions", "doorman_resolve"),
    definition!(Function, "functions", "doorman_resolve_workspace"),
    definition!(Function, "functions", "doorman_sealed_key_id"),
    definition!(Function, "functions", "doorman_secret_key_ids"),
    definition!(Function, "functions", "doorman_set_local", citus),
    definition!(Function, "functions", "doorman_settle_receipts", citus),
    definition!(Function, "functions", "doorman_sweep_receipts"),
    definition!(Function, "functions", "doorman_sweep_watermark"),
    definition!(Function, "functions", "doorman_take_install_state"),
    definition!(Function, "functions", "doorman_write_outcomes", citus),
    definition!(Trigger, "triggers", "doorman_directory_notice"),
    definition!(Policy, "policies", "admin_audit"),
    definition!(Policy, "policies", "admin_replay_job_events"),
    definition!(Policy, "policies", "admin_replay_jobs"),
    definition!(Policy, "policies", "agent_bridges"),
    definition!(Policy, "policies", "deleted_tenants"),
    definition!(Policy, "policies", "messaging_activity_hours"),
    definition!(Policy, "policies", "messaging_event_attempts", citus),
    definition!(Policy, "policies", "messaging_event_payloads", citus),
    definition!(Policy, "policies", "messaging_event_receipts", citus),
    definition!(Policy, "policies", "messaging_install_links"),
    definition!(Policy, "policies", "messaging_install_states"),
    definition!(Policy, "policies", "messaging_installations"),
    definition!(Policy, "policies", "messaging_request_replays", citus),
    definition!(Policy, "policies", "messaging_workspaces"),
    definition!(Policy, "policies", "tenants"),
];

/// The stamp a policy carries as its comment: the file it came from and a digest of its text.
pub fn stamp(definition: &Definition, form: Form) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, definition.sql(form).as_bytes());
    let hex: String = digest.as_ref()[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("defined by postgres/sql/{} (sha256 {hex})", definition.file(form))
}

/// The policies a policy file creates: `CREATE POLICY <name> ON public.<table>` lines.
pub fn policies_of(sql: &str) -> Vec<(String, String)> {
    sql.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["CREATE", "POLICY", name, "ON", table, ..] => Some((
                    (*name).to_owned(),
                    table.trim_start_matches("public.").trim_end_matches(';').to_owned(),
                )),
                _ => None,
            }
        })
        .collect()
}

/// Each `CREATE OR REPLACE FUNCTION public.<name>(…)` of a file, with its body (the text
/// between its dollar quotes, as PostgreSQL stores it in `pg_proc.prosrc`).
pub fn functions_of(sql: &str) -> Vec<(String, String)> {
    const OPENING: &str = "CREATE OR REPLACE FUNCTION public.";
    let mut found = Vec::new();
    let mut rest = sql;
    while let Some(at) = rest.find(OPENING) {
        rest = &rest[at + OPENING.len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let Some(open) = rest.find('$') else { break };
        let Some(tag_len) = rest[open + 1..].find('$') else { break };
        let tag = &rest[open..open + tag_len + 2];
        let body_start = open + tag.len();
        let Some(body_len) = rest[body_start..].find(tag) else { break };
        found.push((name, rest[body_start..body_start + body_len].to_owned()));
        rest = &rest[body_start + body_len + tag.len()..];
    }
    found
}

/// Applies every definition in `form` (a policy file only when its table's policies do not all
/// carry its stamp already); returns how many files were applied. Each file is one
/// transaction. Called by `doorman migrate` after the migrations, holding their lock.
pub fn apply(conn: &mut SyncPg, form: Form) -> Result<usize, MigrationError> {
    let mut applied = 0;
    for definition in DEFINITIONS {
        let sql = definition.sql(form);
        let failed = |error: diesel::result::Error| {
            MigrationError::Failed(format!("applying postgres/sql/{}: {error}", definition.file(form)))
        };
        match definition.kind {
            Kind::Function | Kind::Trigger => conn.batch_execute(sql).map_err(failed)?,
            Kind::Policy => {
                let stamp = stamp(definition, form);
                let policies = policies_of(sql);
                if stamped(conn, definition.name, &stamp, policies.len()).map_err(failed)? {
                    continue;
                }
                // One statement at a time in one transaction: Citus propagates a distributed
                // table's policy by sending the query string to its shards, and refuses one that
                // holds several commands.
                conn.transaction(|conn| {
                    for statement in statements(sql) {
                        conn.batch_execute(statement)?;
                    }
                    for (policy, table) in &policies {
                        conn.batch_execute(&format!(
                            "COMMENT ON POLICY {policy} ON public.{table} IS '{stamp}'"
                        ))?;
                    }
                    Ok::<_, diesel::result::Error>(())
                })
                .map_err(failed)?;
            }
        }
        applied += 1;
    }
    Ok(applied)
}

/// Whether `table` has exactly `count` policies, each commented with `stamp`.
fn stamped(conn: &mut SyncPg, table: &str, stamp: &str, count: usize) -> Result<bool, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Counts {
        #[diesel(sql_type = BigInt)]
        policies: i64,
        #[diesel(sql_type = BigInt)]
        stamped: i64,
    }
    let counts: Counts = diesel::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT count(*) AS policies, count(*) FILTER (WHERE obj_description(p.oid, 'pg_policy') = $2) AS stamped \
               FROM pg_policy p WHERE p.polrelid = to_regclass('public.' || $1)",
        )
        .bind::<Text, _>(table)
        .bind::<Text, _>(stamp),
        conn,
    )?;
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    Ok(counts.policies == count && counts.stamped == count)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/postgres/sql");

    #[test]
    fn the_list_is_the_folder() {
        let mut listed: Vec<String> = DEFINITIONS
            .iter()
            .flat_map(|d| {
                let citus = d.citus.map(|_| d.file(Form::Citus));
                std::iter::once(d.file(Form::Plain)).chain(citus)
            })
            .collect();
        let mut found = Vec::new();
        for dir in ["functions", "triggers", "policies"] {
            for entry in std::fs::read_dir(format!("{FOLDER}/{dir}")).unwrap() {
                found.push(format!("{dir}/{}", entry.unwrap().file_name().to_string_lossy()));
            }
        }
        listed.sort();
        found.sort();
        assert_eq!(listed, found, "DEFINITIONS and postgres/sql/ must agree");
    }

    #[test]
    fn each_file_defines_only_what_it_is_named_for() {
        for d in DEFINITIONS {
            for form in [Form::Plain, Form::Citus] {
                let sql = d.sql(form);
                match d.kind {
                    Kind::Function => {
                        let functions = functions_of(sql);
                        assert!(!functions.is_empty(), "{} defines no function", d.file(form));
                        assert_eq!(
                            sql.matches("CREATE OR REPLACE FUNCTION").count(),
                            functions.len(),
                            "{}: every function as CREATE OR REPLACE FUNCTION public.<name>",
                            d.file(form)
                        );
                        for (name, _) in functions {
                            assert_eq!(name, d.name, "{} defines {name}", d.file(form));
                        }
                        assert!(
                            !sql.contains("CREATE TRIGGER") && !sql.contains("POLICY"),
                            "{}",
                            d.file(form)
                        );
                    }
                    Kind::Trigger => {
                        let triggers = sql.matches("CREATE OR REPLACE TRIGGER").count();
                        assert!(triggers > 0, "{}", d.file(form));
                        assert_eq!(
                            sql.matches(&format!("CREATE OR REPLACE TRIGGER {} ", d.name)).count(),
                            triggers,
                            "{} defines another trigger",
                            d.file(form)
                        );
                        assert!(
                            !sql.contains("CREATE OR REPLACE FUNCTION") && !sql.contains("POLICY"),
                            "{}",
                            d.file(form)
                        );
                    }
                    Kind::Policy => {
                        let policies = policies_of(sql);
                        assert!(!policies.is_empty(), "{}", d.file(form));
                        assert_eq!(sql.matches("CREATE POLICY").count(), policies.len(), "{}", d.file(form));
                        for (policy, table) in &policies {
                            assert_eq!(table, d.name, "{}: {policy} is on another table", d.file(form));
                            assert!(
                                sql.contains(&format!("DROP POLICY IF EXISTS {policy} ON public.{table};")),
                                "{}: {policy} is dropped before it is created",
                                d.file(form)
                            );
                        }
                        assert!(!sql.contains("FUNCTION") && !sql.contains("TRIGGER"), "{}", d.file(form));
                    }
                }
            }
        }
    }

    /// A Citus form differs from the plain one only where its file says why: it starts by
    /// saying so, differs, and defines the same things.
    #[test]
    fn each_citus_form_says_why_it_differs() {
        for d in DEFINITIONS {
            let Some(citus) = d.citus else { continue };
            assert!(
                citus.starts_with("-- Why Citus has its own form"),
                "{} must begin with `-- Why Citus has its own form` and the reason",
                d.file(Form::Citus)
            );
            let reason = citus.lines().take_while(|l| l.starts_with("--")).collect::<String>();
            assert!(reason.len() > 80, "{}: say why, in more than a few words", d.file(Form::Citus));
            assert_ne!(citus, d.plain, "{} is the plain form", d.file(Form::Citus));
            match d.kind {
                Kind::Function => {
                    let names = |sql| functions_of(sql).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
                    assert_eq!(names(citus).len(), names(d.plain).len(), "{}", d.file(Form::Citus));
                }
                Kind::Policy => {
                    assert_eq!(policies_of(citus), policies_of(d.plain), "{}", d.file(Form::Citus))
                }
                Kind::Trigger => {}
            }
        }
    }

    #[test]
    fn a_functions_body_is_the_text_between_its_dollar_quotes() {
        let sql = "-- about\nCREATE OR REPLACE FUNCTION public.f(a int) RETURNS int\nLANGUAGE sql\nAS $$ SELECT a $$;\n\
                   CREATE OR REPLACE FUNCTION public.f(a int, b int) RETURNS int\nAS $function$\nBEGIN RETURN $1; END\n$function$;\n";
        assert_eq!(
            functions_of(sql),
            vec![
                ("f".to_owned(), " SELECT a ".to_owned()),
                ("f".to_owned(), "\nBEGIN RETURN $1; END\n".to_owned())
            ]
        );
    }

    #[test]
    fn a_policy_files_policies_are_read_from_their_create_lines() {
        let sql = "DROP POLICY IF EXISTS p ON public.t;\nCREATE POLICY p ON public.t\n    USING (true);\nCREATE POLICY q ON public.t FOR SELECT TO r\n    USING (true);\n";
        assert_eq!(policies_of(sql), vec![("p".into(), "t".into()), ("q".into(), "t".into())]);
    }
}

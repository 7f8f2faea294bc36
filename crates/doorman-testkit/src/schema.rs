//! The schema as one text: `pg_dump --schema-only` of a database, normalised so it is stable
//! from run to run (no version banner, no session settings, no `\restrict` key, no owner), for
//! `migrations/schema.sql` and for comparing a database before and after a migration's down
//! script.

use std::process::Command;

/// The normalised schema of the database at `database_url` (the migrations' own history table
/// left out). Panics with pg_dump's message if it cannot run: a test cannot go on without it.
pub fn dump(database_url: &str) -> String {
    let output = Command::new("pg_dump")
        .args(["--schema-only", "--no-owner", "--exclude-table=__diesel_schema_migrations"])
        .arg(database_url)
        .output()
        .expect("pg_dump runs (it comes with PostgreSQL's client)");
    assert!(output.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&output.stderr));
    normalise(&String::from_utf8_lossy(&output.stdout))
}

/// Drops what changes without the schema changing: comments (the banner, each object's
/// header), session `SET`s, psql's `\restrict` lines (a fresh key each dump) and runs of blank
/// lines.
pub fn normalise(dump: &str) -> String {
    let mut out = String::new();
    let mut blank = true;
    for line in dump.lines() {
        let line = line.trim_end();
        let noise = line.starts_with("--")
            || line.starts_with("SET ")
            || line.starts_with("SELECT pg_catalog.set_config(")
            || line.starts_with("\\restrict")
            || line.starts_with("\\unrestrict");
        if noise || (line.is_empty() && blank) {
            continue;
        }
        blank = line.is_empty();
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Where two dumps first differ, for a failure message a person can read.
pub fn first_difference(expected: &str, found: &str) -> String {
    let (expected_lines, found_lines): (Vec<_>, Vec<_>) =
        (expected.lines().collect(), found.lines().collect());
    let at = expected_lines
        .iter()
        .zip(&found_lines)
        .position(|(a, b)| a != b)
        .unwrap_or(expected_lines.len().min(found_lines.len()));
    let context = |lines: &[&str]| {
        lines.iter().skip(at.saturating_sub(3)).take(8).copied().collect::<Vec<_>>().join("\n")
    };
    format!(
        "first difference at line {}:\n--- expected\n{}\n--- found\n{}",
        at + 1,
        context(&expected_lines),
        context(&found_lines)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_settings_and_restrict_key_go_and_the_schema_stays() {
        let dump = "--\n-- PostgreSQL database dump\n--\n\n\\restrict abc\n\nSET x = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\n\n\nCREATE TABLE public.t (\n    id integer\n);\n\n\n\\unrestrict abc\n";
        assert_eq!(normalise(dump), "CREATE TABLE public.t (\n    id integer\n);\n");
    }
}

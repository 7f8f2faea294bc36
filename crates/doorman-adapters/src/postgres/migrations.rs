//! The embedded migrations (`migrations/` at the repository root), and how they are applied
//! safely beside a serving Doorman (a rolling deploy):
//!
//! - one `doorman migrate` at a time: a session advisory lock is held while migrating, so two
//!   started together run one after the other (the second finds nothing pending);
//! - every statement waits at most [`LOCK_TIMEOUT`] for a lock (a migration's `ALTER` queued
//!   behind a long transaction would otherwise block every claim queued behind it); a migration
//!   that times out is rolled back and tried again, up to [`LOCK_ATTEMPTS`] times;
//! - a migration whose `metadata.toml` says `run_in_transaction = false` (index builds
//!   `CONCURRENTLY`, which PostgreSQL refuses inside a transaction or a multi-statement string)
//!   has its statements sent one by one ([`ONE_BY_ONE`]);
//! - then every function, trigger and policy from its one file under `postgres/sql/`
//!   ([`super::definitions`], ADR 23; in its Citus form on a Citus coordinator), then the Citus
//!   step ([`super::citus`]), still under the lock; the migrations change tables, indexes and
//!   grants only;
//! - expand, then contract: a release adds what it needs and never removes what the previous
//!   release calls; the removal comes a release later (docs/operations.md, "Upgrading").

use std::time::Duration;

use diesel::connection::{BoxableConnection, SimpleConnection};
use diesel::migration::{Migration, MigrationMetadata, MigrationName, MigrationSource};
use diesel::pg::Pg;
use diesel_async::RunQueryDsl;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use doorman_domain::StorageError;

use super::definitions::{self, Form};
use super::errors::from_diesel;
use super::pool::PgPool;
use super::sync_pg::statements;
pub use super::sync_pg::{MigrationError, SyncPg, with_sync_connection};

const EMBEDDED: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Every migration this binary carries, as they are to be applied.
pub const MIGRATIONS: Migrations = Migrations;

/// How long any statement of a migration waits for a lock before the migration is rolled back
/// and tried again.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a migration that could not take its locks is tried.
pub const LOCK_ATTEMPTS: u32 = 5;

/// The advisory lock `doorman migrate` holds (`"doorman migrate"` as bytes, truncated).
const MIGRATE_LOCK: i64 = 0x646f_6f72_6d61_6e6d;

/// The migrations run outside a transaction, with their statements: embedded a second time so
/// they can be sent one at a time. A test checks the list against the migrations' metadata.
pub const ONE_BY_ONE: &[(&str, &str, &str)] = &[
    (
        "20261202000002",
        include_str!("../../../../migrations/2026-12-02-000002_heap_only_completions_indexes/up.sql"),
        include_str!("../../../../migrations/2026-12-02-000002_heap_only_completions_indexes/down.sql"),
    ),
    (
        "20261209000001",
        include_str!("../../../../migrations/2026-12-09-000001_audit_found_by_action_and_key/up.sql"),
        include_str!("../../../../migrations/2026-12-09-000001_audit_found_by_action_and_key/down.sql"),
    ),
];

/// The embedded migrations, with those that run outside a transaction sent one statement at a
/// time.
#[derive(Debug, Clone, Copy)]
pub struct Migrations;

impl MigrationSource<Pg> for Migrations {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<Pg>>>> {
        let embedded = MigrationSource::<Pg>::migrations(&EMBEDDED)?;
        Ok(embedded
            .into_iter()
            .map(|migration| {
                let version = migration.name().version().to_string();
                match ONE_BY_ONE.iter().find(|(v, _, _)| *v == version) {
                    Some(&(_, up, down)) => {
                        Box::new(OneByOne { inner: migration, up, down }) as Box<dyn Migration<Pg>>
                    }
                    None => migration,
                }
            })
            .collect())
    }
}

/// A migration whose statements are sent one at a time.
struct OneByOne {
    inner: Box<dyn Migration<Pg>>,
    up: &'static str,
    down: &'static str,
}

impl OneByOne {
    fn each(conn: &mut dyn BoxableConnection<Pg>, sql: &str) -> diesel::migration::Result<()> {
        for statement in statements(sql) {
            conn.batch_execute(statement)?;
        }
        Ok(())
    }
}

impl Migration<Pg> for OneByOne {
    fn run(&self, conn: &mut dyn BoxableConnection<Pg>) -> diesel::migration::Result<()> {
        Self::each(conn, self.up)
    }

    fn revert(&self, conn: &mut dyn BoxableConnection<Pg>) -> diesel::migration::Result<()> {
        Self::each(conn, self.down)
    }

    fn metadata(&self) -> &dyn MigrationMetadata {
        self.inner.metadata()
    }

    fn name(&self) -> &dyn MigrationName {
        self.inner.name()
    }
}

/// Applies every pending migration as the connecting (owner) user, one `doorman migrate` at a
/// time, each statement waiting at most [`LOCK_TIMEOUT`] for its locks (a migration that times
/// out is tried again), then the SQL definitions ([`super::definitions`], in their Citus form on
/// a Citus coordinator; not when a newer release has migrated the database: its definitions
/// stay), then, on a Citus coordinator, distributes the receipts
/// ([`super::citus`]); returns the versions applied. Runs the synchronous harness on a
/// blocking thread.
pub async fn run_pending(database_url: &str) -> Result<Vec<String>, MigrationError> {
    with_sync_connection(database_url, |conn| {
        take_migrate_lock(conn)?;
        conn.batch_execute(&format!("SET lock_timeout = '{}ms'", LOCK_TIMEOUT.as_millis()))
            .map_err(MigrationError::failed)?;
        let applied = with_lock_retries(conn).and_then(|applied| {
            let newer = unknown_versions(conn)?;
            if !newer.is_empty() {
                // A newer release migrated this database (a rollback, or an old process's
                // migrate step restarting): its functions and policies are its own, and putting
                // back this release's would undo them under it.
                tracing::warn!(
                    versions = ?newer,
                    "the database holds migrations this release does not know (a newer release migrated it);                      its SQL definitions are that release's and are left as they are"
                );
                return Ok(applied);
            }
            let citus = super::citus::is_citus(conn)?;
            let form = if citus { Form::Citus } else { Form::Plain };
            let defined = retrying(conn, "a SQL definition", |conn| definitions::apply(conn, form))?;
            tracing::debug!(defined, ?form, "SQL definitions applied");
            if citus {
                super::citus::distribute(conn)?;
            }
            Ok(applied)
        });
        let unlocked =
            conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATE_LOCK}); RESET lock_timeout"));
        let applied = applied?;
        unlocked.map_err(MigrationError::failed)?;
        Ok(applied)
    })
    .await
}

/// The versions the database has applied that this binary does not embed: a newer release's.
fn unknown_versions(conn: &mut SyncPg) -> Result<Vec<String>, MigrationError> {
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    let applied: Vec<Applied> =
        diesel::RunQueryDsl::load(diesel::sql_query("SELECT version FROM __diesel_schema_migrations"), conn)
            .map_err(MigrationError::failed)?;
    let embedded = embedded_versions().map_err(MigrationError::failed)?;
    Ok(applied.into_iter().map(|a| a.version).filter(|v| !embedded.contains(v)).collect())
}

/// `work` (`what` names it in the log), tried again (up to [`LOCK_ATTEMPTS`] times) when it could
/// not take its locks in time.
fn retrying<T>(
    conn: &mut SyncPg,
    what: &str,
    mut work: impl FnMut(&mut SyncPg) -> Result<T, MigrationError>,
) -> Result<T, MigrationError> {
    let mut attempt = 1;
    loop {
        match work(conn) {
            Err(error) if attempt < LOCK_ATTEMPTS && error.to_string().contains("lock timeout") => {
                tracing::warn!(attempt, error = %error, "{what} could not take its locks in time; trying it again");
                std::thread::sleep(Duration::from_millis(500) * attempt);
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// Takes the migrate lock, asking again every half second rather than waiting in a statement:
/// an index built `CONCURRENTLY` by the migrator holding it waits for every open transaction,
/// and a waiting `pg_advisory_lock` is one (a deadlock, seen here).
fn take_migrate_lock(conn: &mut SyncPg) -> Result<(), MigrationError> {
    #[derive(diesel::QueryableByName)]
    struct Taken {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        taken: bool,
    }
    let mut said = false;
    loop {
        let taken: Taken = diesel::RunQueryDsl::get_result(
            diesel::sql_query(format!("SELECT pg_try_advisory_lock({MIGRATE_LOCK}) AS taken")),
            conn,
        )
        .map_err(MigrationError::failed)?;
        if taken.taken {
            return Ok(());
        }
        if !said {
            tracing::info!("another doorman migrate is running; waiting for it to finish");
            said = true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The pending migrations, applied; one that could not take its locks in time is tried again,
/// the ones before it staying applied.
fn with_lock_retries(conn: &mut SyncPg) -> Result<Vec<String>, MigrationError> {
    retrying(conn, "a migration", |conn| {
        let versions = conn.run_pending_migrations(MIGRATIONS).map_err(MigrationError::failed)?;
        Ok(versions.iter().map(ToString::to_string).collect())
    })
}

/// What `/readyz` reports about the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Some migration this binary embeds is not applied.
    MigrationsPending,
    /// The server reached accepts no writes (a standby, or a primary on its way down): claims
    /// would fail. A URL with `target_session_attrs=read-write` never connects to one.
    ReadOnly,
}

/// Whether the database has every migration this binary embeds and accepts writes.
pub async fn readiness(pool: &PgPool) -> Result<Readiness, StorageError> {
    #[derive(diesel::QueryableByName)]
    struct Applied {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        read_only: bool,
    }
    let mut unit = pool.unit().await?;
    let applied = diesel::sql_query(
        "SELECT version, pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only \
           FROM __diesel_schema_migrations",
    )
    .load::<Applied>(&mut unit)
    .await
    .map_err(from_diesel);
    let applied = unit.finish(applied).await?;
    let embedded =
        embedded_versions().map_err(|e| StorageError::Unexpected(format!("embedded migrations: {e}")))?;
    if applied.iter().any(|a| a.read_only) {
        return Ok(Readiness::ReadOnly);
    }
    let current = embedded.iter().all(|version| applied.iter().any(|a| &a.version == version));
    Ok(if current { Readiness::Ready } else { Readiness::MigrationsPending })
}

/// How many migrations this binary embeds.
pub fn embedded_count() -> usize {
    embedded_versions().map(|versions| versions.len()).unwrap_or(0)
}

/// The versions of the migrations this binary embeds, as `__diesel_schema_migrations` holds them.
fn embedded_versions() -> diesel::migration::Result<Vec<String>> {
    Ok(MigrationSource::<Pg>::migrations(&MIGRATIONS)?
        .iter()
        .map(|m| m.name().version().to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_outside_a_transaction_is_sent_one_statement_at_a_time() {
        let embedded = MigrationSource::<Pg>::migrations(&EMBEDDED).unwrap();
        let outside: Vec<String> = embedded
            .iter()
            .filter(|m| !m.metadata().run_in_transaction())
            .map(|m| m.name().version().to_string())
            .collect();
        let listed: Vec<String> = ONE_BY_ONE.iter().map(|(v, _, _)| (*v).to_owned()).collect();
        assert_eq!(outside, listed, "metadata.toml and ONE_BY_ONE must agree");
    }
}

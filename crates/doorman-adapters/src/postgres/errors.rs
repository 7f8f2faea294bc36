//! Translation of Diesel, connection and pool errors into the domain's [`StorageError`].
//!
//! `Unavailable` is for what waiting can fix (no connection, a closed connection, a pool
//! timeout, a serialization conflict, a deadlock, a lock or statement timeout, a cancel, a
//! server shutting down or starting up, no connection slot left); everything else is
//! `Unexpected` (a constraint, a missing column: a bug or a schema drift, which a retry meets
//! again). Messages come from the driver and the server, which never include the connection
//! password.

use diesel::result::{ConnectionError, DatabaseErrorKind, Error as DieselError};
use doorman_domain::StorageError;

/// A Diesel error as the domain's: `Unavailable` when waiting may fix it, else `Unexpected`.
pub fn from_diesel(error: DieselError) -> StorageError {
    match error {
        DieselError::DatabaseError(kind, info) => match kind {
            // UnableToSendCommand: the connection broke mid-statement (a cut, a restart).
            // ReadOnlyTransaction: a standby, or a primary on its way down; nothing was written.
            DatabaseErrorKind::ClosedConnection
            | DatabaseErrorKind::UnableToSendCommand
            | DatabaseErrorKind::SerializationFailure
            | DatabaseErrorKind::ReadOnlyTransaction => StorageError::Unavailable(info.message().to_owned()),
            _ if is_transient(info.message()) => StorageError::Unavailable(info.message().to_owned()),
            _ => StorageError::Unexpected(info.message().to_owned()),
        },
        DieselError::BrokenTransactionManager => {
            StorageError::Unavailable("connection left in a broken transaction state".into())
        }
        other => StorageError::Unexpected(other.to_string()),
    }
}

/// Whether the database refused `error`'s statement because of one row's data: an integrity
/// constraint (`CHECK`, `NOT NULL`, unique, foreign key, exclusion), told apart by its
/// SQLSTATE. Without that row the rest of the statement may be written; any other refusal
/// (a revoked grant, a missing function, a timeout) is about the statement, whatever its rows.
pub(crate) fn is_refused_for_a_row(error: &DieselError) -> bool {
    matches!(
        error,
        DieselError::DatabaseError(
            DatabaseErrorKind::CheckViolation
                | DatabaseErrorKind::NotNullViolation
                | DatabaseErrorKind::UniqueViolation
                | DatabaseErrorKind::ForeignKeyViolation
                | DatabaseErrorKind::ExclusionViolation
                | DatabaseErrorKind::RestrictViolation,
            _
        )
    )
}

/// What PostgreSQL says (in English, its default `lc_messages`) for the conditions waiting
/// fixes that Diesel reports as `Unknown`: diesel-async keeps the SQLSTATE to itself (its
/// error wrapper is private and has no code), so the message is what there is. Each with its
/// SQLSTATE. A login whose messages are not in English has its sessions set `lc_messages =
/// 'C'` when it may, and is warned about at start when it may not ([`super::login`]; there
/// these are `Unexpected`: answered 500, and Slack still retries).
const TRANSIENT: [&str; 16] = [
    "deadlock detected",                                                 // 40P01
    "canceling statement due to lock timeout",                           // 55P03
    "could not obtain lock on",                                          // 55P03 (NOWAIT)
    "canceling statement due to statement timeout",                      // 57014
    "canceling statement due to user request",                           // 57014 (pg_cancel_backend)
    "canceling statement due to conflict with recovery",                 // 40001 (a standby)
    "terminating connection due to administrator command",               // 57P01
    "terminating connection because of crash of another server process", // 57P02
    "terminating connection due to idle-in-transaction timeout",         // 25P03
    "the database system is", // 57P03 (starting up, shutting down, in recovery)
    "sorry, too many clients already", // 53300
    "remaining connection slots are reserved", // 53300
    "server closed the connection unexpectedly", // a connection lost mid-statement
    NODE_UNREACHABLE[0],      // Citus: a worker is down or cut off (08001)
    NODE_UNREACHABLE[1],      // Citus: a worker lost mid-transaction (08006)
    CITUS_COMMIT_UNKNOWN,     // Citus: a worker lost under a one-phase COMMIT (XX000)
];

/// How Citus says that a worker did not answer the `COMMIT` of a transaction that wrote only
/// there (a one-phase commit): the coordinator rolls back, but the worker may have committed.
/// A statement that failed so may have been written ([`super::claims::may_have_committed`]).
pub(crate) const CITUS_COMMIT_UNKNOWN: &str = "could not commit transaction for shard";

/// Whether a server's error message says the statement's commit may have happened although
/// the statement failed: the session was ended under it, or a Citus worker did not answer its
/// one-phase `COMMIT`.
pub(crate) fn commit_may_have_happened(message: &str) -> bool {
    message.starts_with("terminating connection") || message.starts_with(CITUS_COMMIT_UNKNOWN)
}

/// How Citus words an error about a node (a worker) it could not connect to, and about one
/// whose connection broke inside the transaction (the transaction is aborted on every node).
const NODE_UNREACHABLE: [&str; 2] =
    ["connection to the remote node", "failure on connection marked as essential"];

/// Whether `error` says a node of a distributed database (a Citus worker) could not be
/// reached: the statement wrote nothing, and the tenants whose shards are elsewhere can still
/// be written.
pub(crate) fn is_node_unreachable(error: &StorageError) -> bool {
    matches!(error, StorageError::Unavailable(message) if NODE_UNREACHABLE.iter().any(|m| message.contains(m)))
}

fn is_transient(message: &str) -> bool {
    TRANSIENT.iter().any(|known| message.starts_with(known) || message.contains(known))
}

/// Whether `error` says the connection itself is gone (closed under the statement, or the
/// statement could not be sent), rather than anything about the statement.
pub(crate) fn is_dead_connection(error: &DieselError) -> bool {
    matches!(
        error,
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _
        )
    )
}

pub(crate) fn from_connection(error: ConnectionError) -> StorageError {
    StorageError::Unavailable(format!("cannot connect to the database: {error}"))
}

/// A pool that gave no connection: with why the last attempt to open one failed, if one did
/// (refused, TLS, authentication), since waiting is only what it looked like; and, when none
/// has failed yet and none is open, that the server has not answered.
pub(crate) fn from_pool(
    error: bb8::RunError<diesel_async::pooled_connection::PoolError>,
    last_failure: Option<String>,
    open: u32,
) -> StorageError {
    match error {
        bb8::RunError::TimedOut => StorageError::Unavailable(match (last_failure, open) {
            (Some(cause), _) => format!("no database connection: {cause}"),
            (None, 0) => "no database connection: the server has not answered a connection attempt yet \
                          (a host or proxy that accepts and never answers, or a network that drops packets)"
                .into(),
            (None, open) => {
                format!("every database connection is busy ({open} open); none came free in time")
            }
        }),
        bb8::RunError::User(error) => {
            StorageError::Unavailable(format!("database connection failed: {error}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(message: &str) -> DieselError {
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, Box::new(message.to_owned()))
    }

    /// Citus's words for a worker that could not be reached, and for one that did not answer a
    /// one-phase COMMIT (Citus 13.2's `ErrorIfPostCommitFailedShardPlacements`), are worth
    /// retrying; only the second may have written.
    #[test]
    fn citus_node_failures_are_unavailable_and_a_lost_commit_may_have_written() {
        let unreachable = "connection to the remote node postgres@127.0.0.1:5461 failed with the following error: Connection refused";
        let essential = "failure on connection marked as essential: 127.0.0.1:5461";
        let commit = "could not commit transaction for shard 102008 on at least one active node";
        for message in [unreachable, essential, commit] {
            assert!(matches!(from_diesel(server_error(message)), StorageError::Unavailable(_)), "{message}");
        }
        assert!(is_node_unreachable(&from_diesel(server_error(unreachable))));
        assert!(is_node_unreachable(&from_diesel(server_error(essential))));
        assert!(commit_may_have_happened(commit));
        assert!(commit_may_have_happened("terminating connection due to administrator command"));
        assert!(!commit_may_have_happened(unreachable));
        assert!(!commit_may_have_happened(essential));
        assert!(!commit_may_have_happened("duplicate key value violates unique constraint"));
    }
}

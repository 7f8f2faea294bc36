//! Translation of Diesel, connection and pool errors into the domain's [`StorageError`].
//!
//! `Unavailable` is for what waiting can fix (no connection, a closed connection, a pool
//! timeout, a serialization conflict); everything else is `Unexpected`. Messages come from
//! the driver and the server, which never include the connection password.

use diesel::result::{ConnectionError, DatabaseErrorKind, Error as DieselError};
use doorman_domain::StorageError;

pub(crate) fn from_diesel(error: DieselError) -> StorageError {
    match error {
        DieselError::DatabaseError(kind, info) => match kind {
            // UnableToSendCommand: the connection broke mid-statement (a cut, a restart).
            // ReadOnlyTransaction: a standby, or a primary on its way down; nothing was written.
            DatabaseErrorKind::ClosedConnection
            | DatabaseErrorKind::UnableToSendCommand
            | DatabaseErrorKind::SerializationFailure
            | DatabaseErrorKind::ReadOnlyTransaction => StorageError::Unavailable(info.message().to_owned()),
            _ => StorageError::Unexpected(info.message().to_owned()),
        },
        DieselError::BrokenTransactionManager => {
            StorageError::Unavailable("connection left in a broken transaction state".into())
        }
        other => StorageError::Unexpected(other.to_string()),
    }
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
/// (refused, TLS, authentication), since waiting is only what it looked like.
pub(crate) fn from_pool(
    error: bb8::RunError<diesel_async::pooled_connection::PoolError>,
    last_failure: Option<String>,
) -> StorageError {
    match error {
        bb8::RunError::TimedOut => StorageError::Unavailable(match last_failure {
            Some(cause) => format!("no database connection: {cause}"),
            None => "timed out waiting for a free database connection".into(),
        }),
        bb8::RunError::User(error) => {
            StorageError::Unavailable(format!("database connection failed: {error}"))
        }
    }
}

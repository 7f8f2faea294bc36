//! The time limits a connection's session keeps.

use std::time::Duration;

/// The time limits a session keeps, set when it is opened (and, through a transaction pooler,
/// per transaction: [`SessionLimits::local_settings`]). Zero means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionLimits {
    /// `statement_timeout`: the longest any statement may run.
    pub statement: Duration,
    /// `lock_timeout`: the longest a statement may wait for a lock.
    pub lock: Duration,
    /// `idle_in_transaction_session_timeout`: a transaction left open this long is ended by
    /// the server (its locks with it).
    pub idle_in_transaction: Duration,
}

impl SessionLimits {
    fn settings(&self) -> [(&'static str, Duration); 3] {
        [
            ("statement_timeout", self.statement),
            ("lock_timeout", self.lock),
            ("idle_in_transaction_session_timeout", self.idle_in_transaction),
        ]
    }

    /// `SET …` for the session.
    pub fn session_sql(&self) -> String {
        self.settings().iter().map(|(name, d)| format!("SET {name} = {}; ", d.as_millis())).collect()
    }

    /// `set_config(…, true)` for one transaction, each an item of one `SELECT` list. Not
    /// `SET LOCAL`: Citus forwards a `SET LOCAL` to its workers with the whole query string it
    /// came in, and the rest of a `BEGIN; …` string must not run there.
    pub fn local_settings(&self) -> Vec<String> {
        self.settings()
            .iter()
            .map(|(name, d)| format!("set_config('{name}', '{}', true)", d.as_millis()))
            .collect()
    }

    pub(super) async fn apply(
        &self,
        mut conn: diesel_async::AsyncPgConnection,
    ) -> Result<diesel_async::AsyncPgConnection, diesel::ConnectionError> {
        if *self != Self::default() {
            use diesel_async::SimpleAsyncConnection;
            conn.batch_execute(&self.session_sql())
                .await
                .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
        }
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_limits_are_set_in_milliseconds_for_the_session_or_one_transaction() {
        let limits = SessionLimits {
            statement: Duration::from_millis(1500),
            lock: Duration::from_secs(1),
            idle_in_transaction: Duration::from_secs(10),
        };
        assert_eq!(
            limits.session_sql(),
            "SET statement_timeout = 1500; SET lock_timeout = 1000; SET idle_in_transaction_session_timeout = 10000; "
        );
        assert_eq!(limits.local_settings()[0], "set_config('statement_timeout', '1500', true)");
    }
}

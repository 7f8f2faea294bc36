//! One batch (or part) in one statement, sent again on a fresh connection while the
//! connection is lost under it, until the batch's deadline.
//!
//! A statement whose connection died before its answer may have committed: from then on the
//! batch's claims go as a settle (which claims what is not yet held and reads back what is,
//! [`super::super::claims`]), its outcomes as they are (they are idempotent), and its
//! fingerprints not at all (one already recorded would read as a replay): they are answered
//! unconfirmed. A statement that wrote nothing is the batch's answer the first time; after a
//! lost connection it is not (the earlier one may have committed), and the batch is sent
//! again until its time is up, then answered unconfirmed.

use std::time::Duration;

use diesel_async::RunQueryDsl;
use doorman_domain::StorageError;
use tokio::time::Instant;

use super::super::claims::{may_have_committed, unconfirmed};
use super::super::errors::{from_diesel, is_refused_for_a_row};
use super::super::placements::NodeWrites;
use super::super::pool::PgPool;
use super::super::statement::Kept;
use super::deadline::Deadline;
use super::on_node::{self, NodeBatch};
use super::rows::{BatchRows, Row};
use super::{CycleSettings, Write, Written};

/// The pause between two attempts to send a batch whose connection was lost: long enough not
/// to spin while no primary accepts connections, short against a promotion (~1 s).
const RESEND_PAUSE: Duration = Duration::from_millis(50);

/// A batch (or part) that wrote nothing, and whether one of its rows is why.
pub(super) struct NotWritten {
    pub(super) error: StorageError,
    /// The database refused a row's data (a constraint), answering in this long (the
    /// statement's round trip, not the wait for a connection): another part of the batch,
    /// without that row, may be written, in about as long.
    pub(super) refused_row: Option<Duration>,
}

impl NotWritten {
    fn statement(error: StorageError) -> Self {
        Self { error, refused_row: None }
    }
}

/// Writes one batch in one statement, sending it again while its connection is lost; one
/// answer per request, in the requests' order. Nothing written (the first statement refused,
/// or never sent) is the caller's to handle: [`super::fallbacks`].
pub(super) async fn write_in_one_statement(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
) -> Result<Vec<Written>, NotWritten> {
    let rows = BatchRows::of(batch, settings.prune.as_deref());
    let on_node = settings.node.as_ref().map(|node| (node, NodeBatch::of(&rows, node)));
    let mut attempts = Attempts { may_have_committed: rows.settles(), requests_lost: None };
    loop {
        let (settle, with_requests) = (attempts.may_have_committed, attempts.requests_lost.is_none());
        // Nothing left to send: fingerprints alone, lost with the connection.
        if !rows.has_writes(with_requests) {
            return Ok(rows.answers(batch, Vec::new(), attempts.requests_lost));
        }
        // On a node, its statements; else the functions' calls, built only for that route.
        let sent = if let Some((node, node_batch)) = &on_node {
            send(&node.pool, Statement::OnNode { batch: node_batch, node, settle, with_requests }, deadline)
                .await
        } else if let Some(statement) = rows.statement(settle, with_requests) {
            send(pool, Statement::Functions(statement), deadline).await
        } else {
            return Ok(rows.answers(batch, Vec::new(), attempts.requests_lost));
        };
        let error = match sent {
            Sent::Answered(answered) => return Ok(rows.answers(batch, answered, attempts.requests_lost)),
            Sent::NotWritten(not_written) if !attempts.may_have_committed => return Err(not_written),
            // A Citus node that refuses connections is down: the batch cannot be settled on
            // it now, and waiting out the deadline would hold the node's writer (and every
            // claim queued behind it) for nothing. Unconfirmed now; the domain settles it after
            // the answer, as it would at the deadline.
            Sent::NodeDown(error) if attempts.may_have_committed => {
                return Err(NotWritten::statement(unconfirmed(&error)));
            }
            Sent::NodeDown(error) => return Err(NotWritten::statement(error)),
            Sent::NoConnection(error) if !attempts.may_have_committed => {
                return Err(NotWritten::statement(error));
            }
            Sent::NotWritten(NotWritten { error, .. }) | Sent::NoConnection(error) => error,
            Sent::Lost(error) => {
                attempts.connection_lost(&error, &rows);
                error
            }
            Sent::Unanswered => attempts.unanswered(),
        };
        pause_to_send_again(deadline, &error).await?;
    }
}

/// What the attempts at sending a batch so far leave it with.
struct Attempts {
    /// A statement sent earlier may have committed (in this batch, or before it for claims
    /// being settled): the claims go as a settle, and a statement that writes nothing now is
    /// not the batch's answer; it is sent again.
    may_have_committed: bool,
    /// The connection was lost with the fingerprints in the statement: they are not sent
    /// again, and each answers this.
    requests_lost: Option<StorageError>,
}

impl Attempts {
    /// The connection died under the statement (`error`): it may have committed.
    fn connection_lost(&mut self, error: &StorageError, rows: &BatchRows<'_>) {
        if !self.may_have_committed {
            let (claims, outcomes) = rows.claims_and_outcomes();
            tracing::warn!(
                claims,
                outcomes,
                error = %error,
                "a batch lost its connection before its commit was confirmed; settling it on a fresh one"
            );
        }
        if rows.has_requests() && self.requests_lost.is_none() {
            self.requests_lost =
                Some(StorageError::Unconfirmed(format!("the connection was lost ({error})")));
        }
        self.may_have_committed = true;
    }

    /// Out of time with the statement sent (a commit waiting for a standby, say): it may yet
    /// commit.
    fn unanswered(&mut self) -> StorageError {
        self.may_have_committed = true;
        StorageError::Unavailable("no answer in the claims' time".into())
    }
}

/// Waits before the batch is sent again, when there is time to; when there is not, the batch
/// is answered unconfirmed (an earlier statement may have committed: only a batch that may
/// have is sent again) with the last attempt's `error`.
async fn pause_to_send_again(deadline: Deadline, error: &StorageError) -> Result<(), NotWritten> {
    if Instant::now() + RESEND_PAUSE >= deadline.answer_by {
        return Err(NotWritten::statement(unconfirmed(error)));
    }
    tokio::time::sleep(RESEND_PAUSE).await;
    Ok(())
}

/// How one attempt at sending the batch ended.
enum Sent {
    Answered(Vec<Row>),
    /// No connection came (in time, or at all): nothing was written.
    NoConnection(StorageError),
    /// A Citus node's pool has no connection open and its last attempt failed: the node is
    /// down, and nothing was written.
    NodeDown(StorageError),
    /// The database refused the statement, which rolled it back: nothing was written.
    NotWritten(NotWritten),
    /// The statement was sent and the connection died before the answer: it may have
    /// committed.
    Lost(StorageError),
    /// The statement was sent and not answered by the deadline: it may yet commit.
    Unanswered,
}

/// What a batch is sent as.
enum Statement<'s> {
    /// The batch functions' calls in one statement (through the coordinator on Citus).
    Functions(Kept<'s>),
    /// The statements of its node's transaction ([`super::on_node`]).
    OnNode { batch: &'s NodeBatch<'s>, node: &'s NodeWrites, settle: bool, with_requests: bool },
}

/// Sends `statement` on a connection of `pool` if one comes by the deadline's `send_by` (if
/// not, nothing was written); a statement sent and not answered by its `answer_by` may yet
/// commit.
async fn send(pool: &PgPool, statement: Statement<'_>, deadline: Deadline) -> Sent {
    let mut unit = match tokio::time::timeout_at(deadline.send_by, pool.unit()).await {
        Ok(Ok(unit)) => unit,
        Ok(Err(error)) if pool.refused_means_down() && pool.is_down() => return Sent::NodeDown(error),
        Ok(Err(error)) => return Sent::NoConnection(error),
        Err(_) => {
            return Sent::NoConnection(StorageError::Unavailable(
                "not written: no database connection came free in time to be answered in the claims' time"
                    .into(),
            ));
        }
    };
    let sent = Instant::now();
    tokio::time::timeout_at(deadline.answer_by, async move {
        let answered = match statement {
            Statement::Functions(statement) => statement.load::<Row>(&mut unit).await,
            Statement::OnNode { batch, node, settle, with_requests } => {
                on_node::write(&mut unit, batch, settle, with_requests, node).await
            }
        };
        match answered {
            Ok(rows) => match unit.finish(Ok(rows)).await {
                Ok(rows) => Sent::Answered(rows),
                // Through a transaction pooler, the commit is its own statement.
                Err(error) => Sent::Lost(error),
            },
            Err(error) if may_have_committed(&error, &mut unit) => Sent::Lost(from_diesel(error)),
            Err(error) => {
                unit.rollback().await;
                let refused_row = is_refused_for_a_row(&error).then(|| sent.elapsed());
                Sent::NotWritten(NotWritten { error: from_diesel(error), refused_row })
            }
        }
    })
    .await
    .unwrap_or(Sent::Unanswered)
}

//! Claims: a batch of concurrent claims is one INSERT, and a claim whose commit is never
//! confirmed is settled rather than guessed.
//!
//! Each claim carries its delivery's [`ClaimId`](doorman_domain::ClaimId), stored with the
//! receipt it makes, and the database answers with the claims it made. When the connection
//! dies under the statement (a primary lost mid-commit, a cut during `COMMIT`), the claims
//! may or may not have been made. The batch is then sent again on a fresh connection, as a
//! *settle* (`doorman_settle_receipts`): it claims what nothing holds yet and answers which of
//! these claims hold their event, so a commit that did happen is found and one that did not
//! is made now. That goes on until the claim's time is up; a claim still unsettled then is
//! answered [`StorageError::Unconfirmed`], and the domain settles it after the answer.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use diesel_async::pooled_connection::PoolableConnection;
use doorman_domain::{Claim, NewReceipt, StorageError};
use tokio::time::Instant;
use uuid::Uuid;

use super::errors::from_diesel;
use super::pool::PgPool;

/// How long claims may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimTimeouts {
    /// A claim not confirmed within this long (its turn in the batch, a connection, the
    /// commit, and any settling after a lost connection) is answered `Unavailable` if it was
    /// never sent and `Unconfirmed` if it was. With the directory's look-up (at most the
    /// pool's wait for a connection) it must fit in Slack's 3 seconds.
    pub confirm_within: Duration,
    /// How long settling an unconfirmed claim after the answer keeps trying before it gives
    /// up: past Slack's last retry (about 5 minutes after the first delivery).
    pub settle_for: Duration,
}

impl Default for ClaimTimeouts {
    fn default() -> Self {
        Self { confirm_within: Duration::from_millis(1500), settle_for: Duration::from_secs(10 * 60) }
    }
}

/// The pause between two attempts to settle a batch whose connection was lost: long enough
/// not to spin while no primary accepts connections, short against a promotion (~1 s).
const SETTLE_PAUSE: Duration = Duration::from_millis(50);

/// A claim on its way to the database, its kept payload (if any) already sealed.
pub(super) struct SealedClaim {
    pub receipt: NewReceipt,
    pub payload: Option<String>,
    /// Sent to settle an unconfirmed claim (so the batch is sent as a settle).
    pub settle: bool,
}

#[derive(diesel::QueryableByName)]
struct Held {
    #[diesel(sql_type = SqlUuid)]
    held_by: Uuid,
}

/// The batch as the SQL functions take it: one row per claim.
struct Rows<'a> {
    tenants: Vec<Uuid>,
    platforms: Vec<&'a str>,
    event_ids: Vec<&'a str>,
    claims: Vec<Uuid>,
    event_types: Vec<&'a str>,
    attempts: Vec<i32>,
    claimed_at: Vec<DateTime<Utc>>,
    payloads: Vec<Option<&'a str>>,
}

impl<'a> Rows<'a> {
    fn of(batch: &'a [SealedClaim]) -> Self {
        let receipts = || batch.iter().map(|sealed| &sealed.receipt);
        Self {
            tenants: receipts().map(|r| *r.key.tenant.as_uuid()).collect(),
            platforms: receipts().map(|r| r.key.platform.as_str()).collect(),
            event_ids: receipts().map(|r| r.key.external_id.as_str()).collect(),
            claims: receipts().map(|r| *r.claim.as_uuid()).collect(),
            event_types: receipts().map(|r| r.event_type.as_str()).collect(),
            attempts: receipts().map(|r| i32::try_from(r.attempt).unwrap_or(i32::MAX)).collect(),
            claimed_at: receipts().map(|r| r.claimed_at).collect(),
            payloads: batch.iter().map(|sealed| sealed.payload.as_deref()).collect(),
        }
    }
}

/// How one attempt at sending the batch ended.
enum Sent {
    /// The database answered: the claims (by id) that hold their event.
    Answered(HashSet<Uuid>),
    /// Nothing reached the database (no connection), or it refused the statement, which
    /// rolled it back: nothing was written.
    NotWritten(StorageError),
    /// The statement was sent and the connection died before the answer: it may have
    /// committed.
    Lost(StorageError),
}

/// Writes one batch of claims in one statement. Two deliveries of one event in a batch are
/// two claims; the database gives the event to one of them.
pub(super) async fn write(
    pool: PgPool,
    batch: Vec<SealedClaim>,
    confirm_within: Duration,
) -> Result<Vec<Claim>, StorageError> {
    let deadline = Instant::now() + confirm_within;
    let rows = Rows::of(&batch);
    let mut settle = batch.iter().any(|sealed| sealed.settle);
    let mut lost = false;
    let held = loop {
        let error = match tokio::time::timeout_at(deadline, send(&pool, &rows, settle)).await {
            Ok(Sent::Answered(held)) => break held,
            Ok(Sent::NotWritten(error)) if !lost => return Err(error),
            Ok(Sent::NotWritten(error)) => error,
            Ok(Sent::Lost(error)) => {
                if !lost {
                    tracing::warn!(claims = batch.len(), error = %error, "a claim batch lost its connection before its commit was confirmed; settling it on a fresh one");
                }
                (lost, settle) = (true, true);
                error
            }
            // Out of time, perhaps with the statement sent (a commit waiting for a standby).
            Err(_) => {
                lost = true;
                StorageError::Unavailable(format!("no answer within {confirm_within:?}"))
            }
        };
        if Instant::now() + SETTLE_PAUSE >= deadline {
            return Err(if lost { unconfirmed(&error) } else { error });
        }
        tokio::time::sleep(SETTLE_PAUSE).await;
    };
    Ok(batch
        .iter()
        .map(
            |sealed| {
                if held.contains(sealed.receipt.claim.as_uuid()) { Claim::Claimed } else { Claim::Duplicate }
            },
        )
        .collect())
}

fn unconfirmed(last: &StorageError) -> StorageError {
    StorageError::Unconfirmed(format!(
        "the connection was lost during the claim and it could not be settled in time ({last})"
    ))
}

async fn send(pool: &PgPool, rows: &Rows<'_>, settle: bool) -> Sent {
    let sql = if settle {
        "SELECT held_by FROM doorman_settle_receipts($1, $2, $3, $4, $5, $6, $7, $8)"
    } else {
        "SELECT held_by FROM doorman_claim_receipts($1, $2, $3, $4, $5, $6, $7, $8)"
    };
    let mut unit = match pool.unit().await {
        Ok(unit) => unit,
        Err(error) => return Sent::NotWritten(error),
    };
    let answered: Result<Vec<Held>, _> = diesel::sql_query(sql)
        .bind::<Array<SqlUuid>, _>(&rows.tenants)
        .bind::<Array<Text>, _>(&rows.platforms)
        .bind::<Array<Text>, _>(&rows.event_ids)
        .bind::<Array<SqlUuid>, _>(&rows.claims)
        .bind::<Array<Text>, _>(&rows.event_types)
        .bind::<Array<Integer>, _>(&rows.attempts)
        .bind::<Array<Timestamptz>, _>(&rows.claimed_at)
        .bind::<Array<Nullable<Text>>, _>(&rows.payloads)
        .load(&mut unit)
        .await;
    match answered {
        Ok(held) => match unit.finish(Ok(held)).await {
            Ok(held) => Sent::Answered(held.into_iter().map(|h| h.held_by).collect()),
            // Through a transaction pooler, the commit is its own statement.
            Err(error) => Sent::Lost(error),
        },
        Err(error) if may_have_committed(&error, &mut unit) => Sent::Lost(from_diesel(error)),
        Err(error) => {
            unit.rollback().await;
            Sent::NotWritten(from_diesel(error))
        }
    }
}

/// Whether a statement that failed with `error` may still have committed: the connection
/// broke under it, or the server ended the session (a shutdown terminates sessions even while
/// their commit waits for a synchronous standby: "terminating connection due to …", SQLSTATE
/// 57P01/57P02, which Diesel reports by message only). Any other error the database answered
/// rolled the statement back.
fn may_have_committed(error: &diesel::result::Error, conn: &mut diesel_async::AsyncPgConnection) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match error {
        Error::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        ) => true,
        Error::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            info.message().starts_with("terminating connection") || conn.is_broken()
        }
        _ => conn.is_broken(),
    }
}

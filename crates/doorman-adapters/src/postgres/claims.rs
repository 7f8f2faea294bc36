//! Claims as a batch sends them: one row per claim, and how long a claim may take.
//!
//! Each claim carries its delivery's [`ClaimId`](doorman_domain::ClaimId), stored with the
//! receipt it makes, and the database answers with the claims it made. When the connection
//! dies under the statement (a primary lost mid-commit, a cut during `COMMIT`), the claims
//! may or may not have been made. The batch is then sent again on a fresh connection
//! ([`super::cycle`]), its claims as a *settle* (`doorman_settle_receipts`): it claims what
//! nothing holds yet and answers which of these claims hold their event, so a commit that did
//! happen is found and one that did not is made now. That goes on until the claim's time is
//! up; a claim still unsettled then is answered [`StorageError::Unconfirmed`], and the domain
//! settles it after the answer.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::pooled_connection::PoolableConnection;
use doorman_domain::{NewReceipt, StorageError};
use uuid::Uuid;

use super::errors::{commit_may_have_happened, is_dead_connection};
use super::statement::{Kept, bind};

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

/// A claim on its way to the database, its kept payload (if any) already sealed.
pub(super) struct SealedClaim {
    pub receipt: NewReceipt,
    pub payload: Option<String>,
    /// Sent to settle an unconfirmed claim (so the batch's claims are sent as a settle).
    pub settle: bool,
}

/// The batch's claims as the SQL functions take them: one array per column.
pub(super) struct ClaimRows<'a> {
    tenants: Vec<Uuid>,
    platforms: Vec<&'a str>,
    event_ids: Vec<&'a str>,
    claims: Vec<Uuid>,
    event_types: Vec<&'a str>,
    attempts: Vec<i32>,
    claimed_at: Vec<DateTime<Utc>>,
    payloads: Vec<Option<&'a str>>,
}

impl<'a> ClaimRows<'a> {
    pub(super) fn of(batch: &[&'a SealedClaim]) -> Self {
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

    /// The call that claims them (or, to `settle`, claims what nothing holds and answers which
    /// of them hold their event), its rows `('claim', claim id, 0, NULL)`.
    pub(super) fn call(&self, settle: bool) -> Kept<'_> {
        let select = if settle {
            "SELECT 'claim'::text AS kind, held_by AS id, 0::bigint AS n, NULL::text AS signature FROM doorman_settle_receipts"
        } else {
            "SELECT 'claim'::text AS kind, held_by AS id, 0::bigint AS n, NULL::text AS signature FROM doorman_claim_receipts"
        };
        Kept::call(
            select,
            vec![
                bind::<Array<SqlUuid>, _>(&self.tenants),
                bind::<Array<Text>, _>(&self.platforms),
                bind::<Array<Text>, _>(&self.event_ids),
                bind::<Array<SqlUuid>, _>(&self.claims),
                bind::<Array<Text>, _>(&self.event_types),
                bind::<Array<Integer>, _>(&self.attempts),
                bind::<Array<Timestamptz>, _>(&self.claimed_at),
                bind::<Array<Nullable<Text>>, _>(&self.payloads),
            ],
        )
    }
}

/// Whether a statement that failed with `error` may still have committed: the connection
/// broke under it, or the server ended the session (a shutdown terminates sessions even while
/// their commit waits for a synchronous standby: "terminating connection due to …", SQLSTATE
/// 57P01/57P02, which Diesel reports by message only), or, on Citus, the worker the statement
/// wrote on did not answer its `COMMIT` (it may have committed before it went). Any other
/// error the database answered rolled the statement back.
pub(super) fn may_have_committed(
    error: &diesel::result::Error,
    conn: &mut diesel_async::AsyncPgConnection,
) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match error {
        _ if is_dead_connection(error) => true,
        Error::DatabaseError(DatabaseErrorKind::Unknown, info) => {
            commit_may_have_happened(info.message()) || conn.is_broken()
        }
        _ => conn.is_broken(),
    }
}

/// Answered when a batch could not be settled within the claim's time.
pub(super) fn unconfirmed(last: &StorageError) -> StorageError {
    StorageError::Unconfirmed(format!(
        "the connection was lost during the claim and it could not be settled in time ({last})"
    ))
}

//! One statement per cycle: everything queued while a writer's last batch was being written
//! goes to the database in one statement (the batch functions' calls that have rows, joined by
//! `UNION ALL`), so a busy cycle pays one commit and one round trip, not one per kind. The
//! receipt store runs two such writers: claims with unnumbered requests' fingerprints, and
//! completions with failures (one shared queue for all of them measured slower, ADR 17); any
//! mix is written the same way.
//!
//! A claim waits only for the batch ahead of it, as before. When the connection dies under the
//! statement, the batch is sent again on a fresh connection until the claims' time is up: its
//! claims as a settle ([`super::claims`]), its outcomes as they are (they are idempotent). Its
//! fingerprints are not sent again (one already recorded would read as a replay): they are
//! answered unconfirmed.
//!
//! Two things keep one request's trouble its own. Claims being settled (unconfirmed earlier)
//! go in a statement of their own, so fresh claims queued beside them are never sent as
//! settles nor answered unconfirmed because of them. And a statement the database refuses
//! because of a row (a constraint: `CHECK`, `NOT NULL`, unique, foreign key; nothing was
//! written) is sent again in halves, down to the requests it refuses, so one tenant's bad row
//! fails that row, not the cycle. A refusal of the statement itself (a revoked grant, a
//! missing function) is about no row: the batch fails once, each request refused with it
//! (halving would send 2N-1 statements that all fail alike). On Citus, a statement that could
//! not reach one of the workers is sent again tenant by tenant, so a lost worker fails the
//! tenants whose shards it holds, not the cycle.
//!
//! A batch is answered by the time its first caller stops waiting ([`Deadline`]): a part not
//! sent by then is answered as not written, and only a statement that was sent and not
//! answered in time is unconfirmed.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use doorman_domain::{Claim, Fingerprint, StorageError, TenantId};
use tokio::time::Instant;
use uuid::Uuid;

use super::claims::{ClaimRows, SealedClaim, may_have_committed, unconfirmed};
use super::errors::{from_diesel, is_node_unreachable, is_refused_for_a_row};
use super::outcomes::{OutcomeRows, PendingOutcome, PruneSchedule, pruned_per_outcome};
use super::pool::PgPool;
use super::statement::{Kept, bind};

/// The pause between two attempts to send a batch whose connection was lost: long enough not
/// to spin while no primary accepts connections, short against a promotion (~1 s).
const RESEND_PAUSE: Duration = Duration::from_millis(50);

/// One request to the cycle's writer.
pub(super) enum Write {
    Claim(SealedClaim),
    Request(TenantId, Fingerprint),
    Outcome(PendingOutcome),
}

/// Its answer.
#[derive(Debug)]
pub(super) enum Written {
    /// A claim's or a fingerprint's.
    Claim(Claim),
    /// An outcome's: expired receipts its tenant pruned with it.
    Outcome(u64),
    /// A fingerprint sent in a batch whose connection was lost: it may have been recorded.
    Unconfirmed(StorageError),
    /// Not written: the database refused it (alone, or in the smallest part of the batch that
    /// still failed), or that part could not be sent.
    Refused(StorageError),
}

/// How the writer works.
#[derive(Debug, Clone)]
pub(super) struct CycleSettings {
    /// How long a batch may take, resending included (the claims' limit).
    pub confirm_within: Duration,
    /// When completions prune their tenants' expired receipts (`None`: never).
    pub prune: Option<std::sync::Arc<PruneSchedule>>,
}

/// One row of the statement's answer: `kind` says which call it came from.
#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Nullable<Text>)]
    signature: Option<String>,
}

/// The batch's fingerprints, each `(tenant, signature)` once.
struct RequestRows<'a> {
    tenants: Vec<Uuid>,
    signatures: Vec<&'a str>,
    expires_at: Vec<chrono::DateTime<chrono::Utc>>,
}

impl<'a> RequestRows<'a> {
    fn of(requests: &[(TenantId, &'a Fingerprint)]) -> Self {
        let mut seen = HashSet::new();
        let unique: Vec<_> =
            requests.iter().filter(|(tenant, f)| seen.insert((*tenant, f.signature()))).collect();
        Self {
            tenants: unique.iter().map(|(t, _)| *t.as_uuid()).collect(),
            signatures: unique.iter().map(|(_, f)| f.signature()).collect(),
            expires_at: unique.iter().map(|(_, f)| f.expires_at()).collect(),
        }
    }

    fn call(&self) -> Kept<'_> {
        Kept::call(
            "SELECT 'request'::text AS kind, claimed_tenant AS id, 0::bigint AS n, claimed_signature AS signature FROM doorman_claim_requests",
            vec![
                bind::<diesel::sql_types::Array<SqlUuid>, _>(&self.tenants),
                bind::<diesel::sql_types::Array<Text>, _>(&self.signatures),
                bind::<diesel::sql_types::Array<Timestamptz>, _>(&self.expires_at),
            ],
        )
    }
}

/// How one attempt at sending the batch ended.
enum Sent {
    Answered(Vec<Row>),
    /// Nothing reached the database (no connection in time), or it refused the statement,
    /// which rolled it back: nothing was written.
    NotWritten(NotWritten),
    /// The statement was sent and the connection died before the answer: it may have
    /// committed.
    Lost(StorageError),
    /// The statement was sent and not answered by the deadline: it may yet commit.
    Unanswered,
}

/// A batch (or part) that wrote nothing, and whether one of its rows is why.
struct NotWritten {
    error: StorageError,
    /// The database refused a row's data (a constraint), answering in this long (the
    /// statement's round trip, not the wait for a connection): another part of the batch,
    /// without that row, may be written, in about as long.
    refused_row: Option<Duration>,
}

impl NotWritten {
    fn statement(error: StorageError) -> Self {
        Self { error, refused_row: None }
    }
}

/// When a batch must be answered by: the claims' time from when it is taken, or sooner, when
/// its first caller stops waiting sooner; and the last moment a statement may still be sent,
/// to be answered by then.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    answer_by: Instant,
    send_by: Instant,
}

impl Deadline {
    fn at(answer_by: Instant) -> Self {
        Self { answer_by, send_by: answer_by }
    }

    /// For a statement expected to take `statement`: sent only while its answer can come in
    /// time.
    fn for_statements_of(self, statement: Duration) -> Self {
        Self { send_by: self.answer_by.checked_sub(statement).unwrap_or(self.answer_by), ..self }
    }
}

/// Writes one batch; one answer per request, in the requests' order, by `answer_by` if given.
/// Claims being settled are written apart from the rest; each part in one statement
/// ([`isolating`]).
pub(super) async fn write(
    pool: PgPool,
    batch: Vec<Write>,
    settings: CycleSettings,
    answer_by: Option<Instant>,
) -> Result<Vec<Written>, StorageError> {
    let within = Instant::now() + settings.confirm_within;
    let deadline = Deadline::at(answer_by.map_or(within, |by| by.min(within)));
    let all: Vec<&Write> = batch.iter().collect();
    let settling = |write: &Write| matches!(write, Write::Claim(claim) if claim.settle);
    if all.iter().all(|write| settling(write)) || !all.iter().any(|write| settling(write)) {
        return isolating(&pool, &all, &settings, deadline, true).await;
    }
    let (pool, settings) = (&pool, &settings);
    Ok(in_parts(&all, settling, |part| async move { isolating(pool, &part, settings, deadline, true).await })
        .await)
}

/// `batch` cut into parts by `key`, each written by `write` at the same time as the others;
/// one answer per request, in the requests' order (a part that failed answers its error for
/// each of its requests).
async fn in_parts<'a, K, F, Fut>(batch: &[&'a Write], key: impl Fn(&Write) -> K, write: F) -> Vec<Written>
where
    K: Eq + std::hash::Hash + Copy,
    F: Fn(Vec<&'a Write>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Written>, StorageError>>,
{
    let mut parts: Vec<(K, Vec<&'a Write>)> = Vec::new();
    for write in batch.iter().copied() {
        let k = key(write);
        match parts.iter_mut().find(|(part, _)| *part == k) {
            Some((_, part)) => part.push(write),
            None => parts.push((k, vec![write])),
        }
    }
    let written = futures_util::future::join_all(parts.iter().map(|(_, part)| {
        let requests = part.len();
        let answered = write(part.clone());
        async move { answer_each(answered.await, requests) }
    }))
    .await;
    let mut answers: HashMap<K, std::vec::IntoIter<Written>> =
        parts.iter().map(|(k, _)| *k).zip(written.into_iter().map(Vec::into_iter)).collect();
    batch
        .iter()
        .map(|write| {
            answers.get_mut(&key(write)).and_then(Iterator::next).unwrap_or_else(|| {
                Written::Refused(StorageError::Unexpected("a request lost its answer".into()))
            })
        })
        .collect()
}

/// A part's answers, or its error as each request's.
fn answer_each(written: Result<Vec<Written>, StorageError>, requests: usize) -> Vec<Written> {
    written.unwrap_or_else(|error| (0..requests).map(|_| Written::Refused(error.clone())).collect())
}

/// Writes `batch` in one statement; if the database refuses one of its rows (nothing
/// written), writes each half on its own, down to the requests it refuses, while there is time
/// for another statement before `deadline` (after it, what is left is answered as not
/// written). A refusal of the statement itself fails the batch once. If a node of a
/// distributed database could not be reached (Citus, ADR 22: nothing was written), writes each
/// tenant's part on its own, so the tenants whose shards are on the nodes still up are served.
fn isolating<'a>(
    pool: &'a PgPool,
    batch: &'a [&'a Write],
    settings: &'a CycleSettings,
    deadline: Deadline,
    whole: bool,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Written>, StorageError>> + Send + 'a>> {
    Box::pin(async move {
        match write_once(pool, batch, settings, deadline).await {
            Err(NotWritten { error, .. }) if is_node_unreachable(&error) && spans_tenants(batch) => {
                tracing::warn!(
                    size = batch.len(),
                    error = %error,
                    "a database node is unreachable; writing the batch tenant by tenant so that only its tenants fail"
                );
                Ok(by_tenant(pool, batch, settings, deadline).await)
            }
            Err(NotWritten { error, refused_row: Some(took) }) if batch.len() > 1 => {
                // Another statement would take about as long as this one did, twice that on a
                // fresh connection, where it is prepared first.
                let deadline = deadline.for_statements_of(took * 2);
                if Instant::now() >= deadline.send_by {
                    return Err(StorageError::Unavailable(format!(
                        "not written: the database refused a row of its batch ({error}), and there was no time left to find which"
                    )));
                }
                if whole {
                    tracing::warn!(
                        size = batch.len(),
                        error = %error,
                        "the database refused a row of a batch; writing it in parts so that only what it refuses fails"
                    );
                }
                let (left, right) = batch.split_at(batch.len() / 2);
                let (left_answers, right_answers) = tokio::join!(
                    isolating(pool, left, settings, deadline, false),
                    isolating(pool, right, settings, deadline, false)
                );
                let mut answers = answer_each(left_answers, left.len());
                answers.extend(answer_each(right_answers, right.len()));
                Ok(answers)
            }
            // The statement itself refused (or a lone row): each request answers it.
            Err(NotWritten { error, .. }) => Err(error),
            Ok(answers) => Ok(answers),
        }
    })
}

/// Each tenant's requests of `batch` written in a statement of their own, all at once; one
/// answer per request, in the requests' order.
async fn by_tenant(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
) -> Vec<Written> {
    in_parts(batch, Write::tenant, |part| async move {
        write_once(pool, &part, settings, deadline).await.map_err(|failed| failed.error)
    })
    .await
}

fn spans_tenants(batch: &[&Write]) -> bool {
    batch.first().is_some_and(|first| batch.iter().any(|write| write.tenant() != first.tenant()))
}

impl Write {
    /// The tenant the request writes for: its rows' distribution column on Citus.
    pub(super) fn tenant(&self) -> TenantId {
        match self {
            Self::Claim(claim) => claim.receipt.key.tenant,
            Self::Request(tenant, _) => *tenant,
            Self::Outcome(outcome) => outcome.key.tenant,
        }
    }
}

/// Writes one batch in one statement; one answer per request, in the requests' order.
async fn write_once(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
) -> Result<Vec<Written>, NotWritten> {
    let (mut claims, mut requests, mut outcomes) = (Vec::new(), Vec::new(), Vec::new());
    for write in batch.iter().copied() {
        match write {
            Write::Claim(claim) => claims.push(claim),
            Write::Request(tenant, fingerprint) => requests.push((*tenant, fingerprint)),
            Write::Outcome(outcome) => outcomes.push(outcome),
        }
    }
    let claim_rows = ClaimRows::of(&claims);
    let request_rows = RequestRows::of(&requests);
    let outcome_rows = OutcomeRows::of(&outcomes, settings.prune.as_deref());

    let mut settle = claims.iter().any(|claim| claim.settle);
    // Once the connection was lost with them, fingerprints are not sent again.
    let mut requests_lost: Option<StorageError> = None;
    let rows = loop {
        let mut parts = Vec::new();
        if !claims.is_empty() {
            parts.push(claim_rows.call(settle));
        }
        if !requests.is_empty() && requests_lost.is_none() {
            parts.push(request_rows.call());
        }
        if !outcomes.is_empty() {
            parts.push(outcome_rows.call());
        }
        let Some(statement) = parts.into_iter().reduce(Kept::union_all) else { break Vec::new() };
        let lost = settle || requests_lost.is_some();
        let error = match send(pool, statement, deadline).await {
            Sent::Answered(rows) => break rows,
            Sent::NotWritten(not_written) if !lost => return Err(not_written),
            Sent::NotWritten(not_written) => not_written.error,
            Sent::Lost(error) => {
                if !lost {
                    tracing::warn!(
                        claims = claims.len(),
                        outcomes = outcomes.len(),
                        error = %error,
                        "a batch lost its connection before its commit was confirmed; settling it on a fresh one"
                    );
                }
                if !requests.is_empty() && requests_lost.is_none() {
                    requests_lost =
                        Some(StorageError::Unconfirmed(format!("the connection was lost ({error})")));
                }
                settle = true;
                error
            }
            // Out of time with the statement sent (a commit waiting for a standby, say).
            Sent::Unanswered => {
                settle = true;
                StorageError::Unavailable("no answer in the claims' time".into())
            }
        };
        if Instant::now() + RESEND_PAUSE >= deadline.answer_by {
            return Err(NotWritten::statement(if settle { unconfirmed(&error) } else { error }));
        }
        tokio::time::sleep(RESEND_PAUSE).await;
    };
    Ok(answers(batch, &requests, &outcomes, rows, requests_lost))
}

/// Sends `statement` on a connection of `pool` if one comes by the deadline's `send_by` (if
/// not, nothing was written); a statement sent and not answered by its `answer_by` may yet
/// commit.
async fn send(pool: &PgPool, statement: Kept<'_>, deadline: Deadline) -> Sent {
    let mut unit = match tokio::time::timeout_at(deadline.send_by, pool.unit()).await {
        Ok(Ok(unit)) => unit,
        Ok(Err(error)) => return Sent::NotWritten(NotWritten::statement(error)),
        Err(_) => {
            return Sent::NotWritten(NotWritten::statement(StorageError::Unavailable(
                "not written: no database connection came free in time to be answered in the claims' time"
                    .into(),
            )));
        }
    };
    let sent = Instant::now();
    tokio::time::timeout_at(deadline.answer_by, async move {
        let answered = statement.load::<Row>(&mut unit).await;
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

/// Reads the rows back into one answer per request. A claim holds its event when its claim id
/// came back; a fingerprint when `(tenant, signature)` came back for its first copy in the batch.
fn answers(
    batch: &[&Write],
    requests: &[(TenantId, &Fingerprint)],
    outcomes: &[&PendingOutcome],
    rows: Vec<Row>,
    requests_lost: Option<StorageError>,
) -> Vec<Written> {
    let (mut held, mut recorded, mut pruned) = (HashSet::new(), HashSet::new(), HashMap::new());
    for row in rows {
        match row.kind.as_str() {
            "claim" => {
                held.insert(row.id);
            }
            "request" => {
                recorded.insert((row.id, row.signature.unwrap_or_default()));
            }
            _ => {
                pruned.insert(row.id, u64::try_from(row.n).unwrap_or(0));
            }
        }
    }
    let mut outcome_answers = pruned_per_outcome(outcomes, pruned).into_iter();
    let mut first_request = HashSet::with_capacity(requests.len());
    batch
        .iter()
        .map(|write| match *write {
            Write::Claim(claim) => Written::Claim(if held.contains(claim.receipt.claim.as_uuid()) {
                Claim::Claimed
            } else {
                Claim::Duplicate
            }),
            Write::Request(tenant, fingerprint) => match &requests_lost {
                Some(error) => Written::Unconfirmed(error.clone()),
                None => {
                    let first = first_request.insert((*tenant, fingerprint.signature()));
                    let was_recorded =
                        recorded.contains(&(*tenant.as_uuid(), fingerprint.signature().to_owned()));
                    Written::Claim(if first && was_recorded { Claim::Claimed } else { Claim::Duplicate })
                }
            },
            Write::Outcome(_) => Written::Outcome(outcome_answers.next().unwrap_or(0)),
        })
        .collect()
}

//! What happens when a batch's statement wrote nothing: which part of the batch is sent again,
//! and how, so that one request's trouble stays its own.
//!
//! - **A row refused** (a constraint: `CHECK`, `NOT NULL`, unique, foreign key): the batch is
//!   sent again in halves ([`in_halves`]), down to the requests the database refuses, so one
//!   tenant's bad row fails that row, not the cycle.
//! - **A Citus worker unreachable** (ADR 22; nothing was written): the batch is sent again
//!   tenant by tenant ([`tenant_by_tenant`]), so a lost worker fails the tenants whose shards
//!   it holds, not the cycle.
//! - **The statement itself refused** (a revoked grant, a missing function): about no row, so
//!   the batch fails once, each request refused with it (halving would send 2N-1 statements
//!   that all fail alike).
//!
//! A lost connection is not here: the same statement is sent again
//! ([`super::one_statement`]).

use doorman_domain::StorageError;
use tokio::time::Instant;

use super::super::errors::is_node_unreachable;
use super::super::pool::PgPool;
use super::deadline::Deadline;
use super::one_statement::{NotWritten, write_in_one_statement};
use super::parts::{answer_each, in_parts};
use super::{CycleSettings, Write, Written};

/// A boxed future of a part's answers (the halves are written recursively).
type Answers<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Written>, StorageError>> + Send + 'a>>;

/// Writes `batch` in one statement; when that writes nothing, falls back as the module says:
/// halves for a refused row, tenant by tenant for an unreachable node, once for the statement.
/// `whole`: `batch` is a whole part of the cycle, not a half of one (its halving is logged).
pub(super) fn write_or_fall_back<'a>(
    pool: &'a PgPool,
    batch: &'a [&'a Write],
    settings: &'a CycleSettings,
    deadline: Deadline,
    whole: bool,
) -> Answers<'a> {
    Box::pin(async move {
        match write_in_one_statement(pool, batch, settings, deadline).await {
            Ok(answers) => Ok(answers),
            Err(NotWritten { error, .. }) if is_node_unreachable(&error) && spans_tenants(batch) => {
                tracing::warn!(
                    size = batch.len(),
                    error = %error,
                    "a database node is unreachable; writing the batch tenant by tenant so that only its tenants fail"
                );
                Ok(tenant_by_tenant(pool, batch, settings, deadline).await)
            }
            Err(NotWritten { error, refused_row: Some(took) }) if batch.len() > 1 => {
                in_halves(pool, batch, settings, deadline, whole, error, took).await
            }
            // The statement itself refused (or a lone row): each request answers it.
            Err(NotWritten { error, .. }) => Err(error),
        }
    })
}

/// The database refused a row of `batch` (`error`, answered in `took`): each half written on
/// its own (and falling back in turn), down to the requests it refuses, while there is time
/// for another statement before `deadline`; after it, what is left is answered as not
/// written.
async fn in_halves(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
    whole: bool,
    error: StorageError,
    took: std::time::Duration,
) -> Result<Vec<Written>, StorageError> {
    // Another statement would take about as long as this one did, twice that on a fresh
    // connection, where it is prepared first.
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
        write_or_fall_back(pool, left, settings, deadline, false),
        write_or_fall_back(pool, right, settings, deadline, false)
    );
    let mut answers = answer_each(left_answers, left.len());
    answers.extend(answer_each(right_answers, right.len()));
    Ok(answers)
}

/// A node of a distributed database could not be reached (nothing was written): each
/// tenant's requests of `batch` written in a statement of their own, all at once, so the
/// tenants whose shards are on the nodes still up are served; one answer per request, in the
/// requests' order.
async fn tenant_by_tenant(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
) -> Vec<Written> {
    in_parts(batch, Write::tenant, |part| async move {
        write_in_one_statement(pool, &part, settings, deadline).await.map_err(|failed| failed.error)
    })
    .await
}

/// Whether `batch` writes for more than one tenant (else there is nothing to split it by).
fn spans_tenants(batch: &[&Write]) -> bool {
    batch.first().is_some_and(|first| batch.iter().any(|write| write.tenant() != first.tenant()))
}

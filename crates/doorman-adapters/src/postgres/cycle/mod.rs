//! One statement per cycle: everything queued while a writer's last batch was being written
//! goes to the database in one statement (the batch functions' calls that have rows, joined by
//! `UNION ALL`), so a busy cycle pays one commit and one round trip, not one per kind. The
//! receipt store runs two such writers: claims with unnumbered requests' fingerprints, and
//! completions with failures (one shared queue for all of them measured slower, ADR 17); any
//! mix is written the same way. A claim waits only for the batch ahead of it.
//!
//! A batch is written in these steps, each a function named for it:
//!
//! 1. [`write`]: the batch's [`Deadline`](deadline::Deadline): it is answered by the time its
//!    first caller stops waiting (or the claims' time), a part not sent by then as not
//!    written; only a statement that was sent and not answered in time is unconfirmed.
//! 2. [`settles_apart`]: claims being settled (unconfirmed earlier) go in a statement of their
//!    own, so fresh claims queued beside them are never sent as settles nor answered
//!    unconfirmed because of them.
//! 3. [`fallbacks::write_or_fall_back`]: each part in one statement; when that writes nothing,
//!    the fallbacks: in halves for a row the database refuses, tenant by tenant for a Citus
//!    worker it cannot reach, once for a statement it refuses ([`fallbacks`] says why).
//! 4. [`one_statement::write_in_one_statement`]: the statement sent, and sent again on a fresh
//!    connection while the connection dies under it, until the deadline: its claims as a
//!    settle ([`super::claims`]), its outcomes as they are (idempotent), its fingerprints not
//!    again (answered unconfirmed).
//! 5. [`rows::BatchRows`]: the requests as their calls' arguments, and the statement's rows
//!    read back into one answer per request, in the requests' order.

mod deadline;
mod fallbacks;
mod on_node;
mod one_statement;
mod parts;
mod rows;

use std::time::Duration;

use doorman_domain::{Claim, Fingerprint, StorageError, TenantId};
use tokio::time::Instant;

use super::claims::SealedClaim;
use super::outcomes::{PendingOutcome, PruneSchedule};
use super::placements::NodeWrites;
use super::pool::PgPool;
use deadline::Deadline;
use fallbacks::write_or_fall_back;
use parts::in_parts;

/// One request to the cycle's writer.
pub(super) enum Write {
    Claim(SealedClaim),
    Request(TenantId, Fingerprint),
    Outcome(PendingOutcome),
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

    /// Whether it goes through the coordinator even on Citus, where a tenant's writes go to its
    /// node ([`on_node`]): a claim settled after its answer (it may be minutes old), or made
    /// long enough ago to be behind the sweep's watermark, which only the coordinator holds
    /// ([`FRESH_FOR`]).
    pub(super) fn needs_the_coordinator(&self) -> bool {
        matches!(self, Self::Claim(claim) if claim.settle || chrono::Utc::now() - claim.receipt.claimed_at > FRESH_FOR)
    }

    /// A claim being settled: unconfirmed earlier, it may already hold its event.
    fn settles(&self) -> bool {
        matches!(self, Self::Claim(claim) if claim.settle)
    }
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
    /// On Citus, the node this writer's tenants' shards are on, written on directly
    /// ([`on_node`]); `None`: through the pool the batch is given (the coordinator, or one
    /// PostgreSQL), by the batch functions.
    pub node: Option<NodeWrites>,
}

/// How long ago a claim may have been made and still be written on its node. A claim made more
/// than 30 s ago (by the database's clock) is checked against the sweep's watermark, which only
/// the coordinator holds (`doorman_claim_receipts` marks one behind it as the sweep would
/// have); the watermark itself is never closer to now than a minute. So 10 s holds while
/// Doorman's and the database's clocks agree within 20 s (ADR 24).
const FRESH_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

/// Writes one batch; one answer per request, in the requests' order, by `answer_by` if given
/// (the steps: the module's documentation).
pub(super) async fn write(
    pool: PgPool,
    batch: Vec<Write>,
    settings: CycleSettings,
    answer_by: Option<Instant>,
) -> Result<Vec<Written>, StorageError> {
    let deadline = Deadline::for_batch(settings.confirm_within, answer_by);
    let batch: Vec<&Write> = batch.iter().collect();
    if mixes_settles_and_fresh(&batch) {
        return Ok(settles_apart(&pool, &batch, &settings, deadline).await);
    }
    write_or_fall_back(&pool, &batch, &settings, deadline, true).await
}

/// Whether `batch` holds both claims being settled and fresh requests.
fn mixes_settles_and_fresh(batch: &[&Write]) -> bool {
    batch.iter().any(|write| write.settles()) && !batch.iter().all(|write| write.settles())
}

/// Claims being settled written in a statement of their own, the rest in another, at the
/// same time: a settle's trouble (it may be unconfirmed again) never becomes a fresh claim's.
async fn settles_apart(
    pool: &PgPool,
    batch: &[&Write],
    settings: &CycleSettings,
    deadline: Deadline,
) -> Vec<Written> {
    in_parts(batch, Write::settles, |part| async move {
        write_or_fall_back(pool, &part, settings, deadline, true).await
    })
    .await
}

//! A batch as the statement's rows: each kind of request as the arguments of its batch
//! function's call, the calls that have rows joined into one statement, and the statement's
//! answer read back into one answer per request.

use std::collections::{HashMap, HashSet};

use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use doorman_domain::{Claim, Fingerprint, StorageError, TenantId};
use uuid::Uuid;

use super::super::claims::{ClaimRows, SealedClaim};
use super::super::outcomes::{OutcomeRows, PendingOutcome, PruneSchedule, pruned_per_outcome};
use super::super::statement::{Kept, bind};
use super::{Write, Written};

/// One row of the statement's answer: `kind` says which call it came from.
#[derive(diesel::QueryableByName)]
pub(super) struct Row {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Nullable<Text>)]
    signature: Option<String>,
}

impl Row {
    /// The claim id (of a claim's row), the tenant (of a fingerprint's or a prune's).
    pub(super) fn id(&self) -> Uuid {
        self.id
    }
}

/// A batch's requests by kind, each kind as its call's arguments.
pub(super) struct BatchRows<'a> {
    pub(super) claims: Vec<&'a SealedClaim>,
    pub(super) requests: Vec<(TenantId, &'a Fingerprint)>,
    pub(super) outcomes: Vec<&'a PendingOutcome>,
    claim_rows: ClaimRows<'a>,
    request_rows: RequestRows<'a>,
    pub(super) outcome_rows: OutcomeRows<'a>,
}

impl<'a> BatchRows<'a> {
    pub(super) fn of(batch: &[&'a Write], prune: Option<&PruneSchedule>) -> Self {
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
        let outcome_rows = OutcomeRows::of(&outcomes, prune);
        Self { claims, requests, outcomes, claim_rows, request_rows, outcome_rows }
    }

    /// Whether the batch's claims are being settled (unconfirmed earlier).
    pub(super) fn settles(&self) -> bool {
        self.claims.iter().any(|claim| claim.settle)
    }

    pub(super) fn has_requests(&self) -> bool {
        !self.requests.is_empty()
    }

    /// How many claims and outcomes the batch holds (for a log line).
    pub(super) fn claims_and_outcomes(&self) -> (usize, usize) {
        (self.claims.len(), self.outcomes.len())
    }

    /// Whether anything is left to send: not when the batch is fingerprints alone and they
    /// are not sent again (`with_requests` false: lost with a connection).
    pub(super) fn has_writes(&self, with_requests: bool) -> bool {
        !self.claims.is_empty() || !self.outcomes.is_empty() || (with_requests && !self.requests.is_empty())
    }

    /// The calls that have rows, joined by `UNION ALL`: the claims as a settle if `settle`,
    /// the fingerprints only if `with_requests`. `None` when no call is left.
    pub(super) fn statement(&self, settle: bool, with_requests: bool) -> Option<Kept<'_>> {
        let mut calls = Vec::new();
        if !self.claims.is_empty() {
            calls.push(self.claim_rows.call(settle));
        }
        if !self.requests.is_empty() && with_requests {
            calls.push(self.request_rows.call());
        }
        if !self.outcomes.is_empty() {
            calls.push(self.outcome_rows.call());
        }
        calls.into_iter().reduce(Kept::union_all)
    }

    /// Reads the rows back into one answer per request of `batch` (the batch these rows were
    /// made of). A claim holds its event when its claim id came back; a fingerprint when
    /// `(tenant, signature)` came back for its first copy in the batch; fingerprints lost with
    /// a connection (`requests_lost`) answer that.
    pub(super) fn answers(
        &self,
        batch: &[&Write],
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
        let mut outcome_answers = pruned_per_outcome(&self.outcomes, pruned).into_iter();
        let mut first_request = HashSet::with_capacity(self.requests.len());
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

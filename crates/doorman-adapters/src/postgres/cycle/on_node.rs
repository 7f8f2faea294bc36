//! On Citus, a batch written on the node that holds its tenants' shards (ADR 24), in one
//! transaction of a few statements, each of which the node plans and runs on its own shards.
//!
//! Through the coordinator, the batch functions' Citus forms write row by row (a multi-row
//! `INSERT … SELECT FROM unnest(…)` is not routed: Citus collects its rows and pushes them to
//! the shards as intermediate results), and every row's statement is planned on the
//! coordinator and again on the worker. Here each tenant of the batch gets, per table, one
//! statement that Citus routes to that tenant's single shard and runs locally, in the node's
//! own backend:
//!
//! - its claims: one multi-row `INSERT … VALUES … ON CONFLICT DO NOTHING RETURNING`, its text
//!   fixed by the number of rows, so each connection prepares it once per size and Citus keeps
//!   its plan (deferred pruning: the shard is chosen from the bound tenant at each run);
//!   when settling, the claims that hold their events read back by claim id;
//! - its kept payloads, for the claims that took their event (only for tenants that keep them);
//! - its fingerprints: the expired ones deleted, then one multi-row `INSERT`;
//! - its outcomes: one `UPDATE … FROM unnest(…)` with the payloads' release in the same
//!   statement, and its prune (at most once a second per tenant) as a call.
//!
//! The transaction names its tenants first (`app.tenant_ids`, by `doorman_set_local`: a
//! `SET LOCAL`, which also reaches another node should Citus forward a statement there), so
//! the shards' row-level security holds the statements to the batch's tenants as the
//! functions' forms do. The answers come back in the same rows as the functions' calls
//! ([`super::rows::Row`]), so reading them back is the same code.
//!
//! What this path does not take (the cycle sends it through the coordinator instead,
//! [`super::needs_the_coordinator`]): a batch with claims being settled after their answer, or
//! claimed long enough ago to be behind the sweep's watermark, which only the coordinator has.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AnsiTransactionManager, AsyncPgConnection, RunQueryDsl, TransactionManager};
use doorman_domain::Fingerprint;
use uuid::Uuid;

use super::super::claims::SealedClaim;
use super::super::outcomes::{PendingKind, PendingOutcome};
use super::super::statement::{Bind, Kept, Part, bind};
use super::rows::{BatchRows, Row};

/// A batch as the node's statements: its tenants in order, each with its rows.
pub(super) struct NodeBatch<'a> {
    /// The tenants as a `uuid[]` literal (UUIDs only, written here), named for the transaction.
    tenants: String,
    by_tenant: Vec<TenantRows<'a>>,
}

/// One tenant's rows of the batch, each kind in the order rows are locked in (platform, then
/// event id), as the functions' forms lock them, so two batches never wait on each other
/// crosswise.
struct TenantRows<'a> {
    tenant: Uuid,
    claims: Vec<&'a SealedClaim>,
    attempts: Vec<i32>,
    /// The claims' event ids and claim ids, for a settle's read-back.
    event_ids: Vec<&'a str>,
    claim_ids: Vec<Uuid>,
    requests: Vec<&'a Fingerprint>,
    signatures: Vec<&'a str>,
    expires_at: Vec<DateTime<Utc>>,
    outcomes: Outcomes<'a>,
    /// This tenant prunes its expired receipts with this batch: (expired before, at most).
    prune: Option<(DateTime<Utc>, i64)>,
}

/// A tenant's outcomes as the `UPDATE`'s arrays.
#[derive(Default)]
struct Outcomes<'a> {
    platforms: Vec<&'static str>,
    event_ids: Vec<&'a str>,
    handled_at: Vec<Option<DateTime<Utc>>>,
    reasons: Vec<Option<&'a str>>,
    failed_at: Vec<Option<DateTime<Utc>>>,
}

impl<'a> NodeBatch<'a> {
    pub(super) fn of(rows: &BatchRows<'a>) -> Self {
        let mut by_tenant: BTreeMap<Uuid, TenantRows<'a>> = BTreeMap::new();
        let mut claims: Vec<&SealedClaim> = rows.claims.clone();
        claims.sort_by_key(|claim| lock_order(&claim.receipt.key));
        for claim in claims {
            let of = rows_of(&mut by_tenant, *claim.receipt.key.tenant.as_uuid());
            of.attempts.push(i32::try_from(claim.receipt.attempt).unwrap_or(i32::MAX));
            of.event_ids.push(claim.receipt.key.external_id.as_str());
            of.claim_ids.push(*claim.receipt.claim.as_uuid());
            of.claims.push(claim);
        }
        let mut requests = rows.requests.clone();
        requests
            .sort_by(|(ta, a), (tb, b)| (ta.as_uuid(), a.signature()).cmp(&(tb.as_uuid(), b.signature())));
        requests.dedup_by(|(ta, a), (tb, b)| ta == tb && a.signature() == b.signature());
        for (id, fingerprint) in requests {
            let of = rows_of(&mut by_tenant, *id.as_uuid());
            of.signatures.push(fingerprint.signature());
            of.expires_at.push(fingerprint.expires_at());
            of.requests.push(fingerprint);
        }
        let mut outcomes: Vec<&PendingOutcome> = rows.outcomes.clone();
        outcomes.sort_by_key(|outcome| lock_order(&outcome.key));
        for outcome in outcomes {
            let of = &mut rows_of(&mut by_tenant, *outcome.key.tenant.as_uuid()).outcomes;
            of.platforms.push(outcome.key.platform.as_str());
            of.event_ids.push(outcome.key.external_id.as_str());
            let (handled_at, reason, failed_at) = match &outcome.kind {
                PendingKind::Handled { at, .. } => (Some(*at), None, None),
                PendingKind::Failed { reason, at } => (None, Some(reason.as_str()), Some(*at)),
            };
            of.handled_at.push(handled_at);
            of.reasons.push(reason);
            of.failed_at.push(failed_at);
        }
        if let (prunes, Some(expired_before), Some(at_most)) = rows.outcome_rows.prunes() {
            for id in prunes {
                rows_of(&mut by_tenant, *id).prune = Some((expired_before, at_most));
            }
        }
        let tenants = by_tenant.keys().map(Uuid::to_string).collect::<Vec<_>>().join(",");
        Self { tenants: format!("{{{tenants}}}"), by_tenant: by_tenant.into_values().collect() }
    }
}

fn rows_of<'m, 'a>(by_tenant: &'m mut BTreeMap<Uuid, TenantRows<'a>>, id: Uuid) -> &'m mut TenantRows<'a> {
    by_tenant.entry(id).or_insert_with(|| TenantRows {
        tenant: id,
        claims: Vec::new(),
        attempts: Vec::new(),
        event_ids: Vec::new(),
        claim_ids: Vec::new(),
        requests: Vec::new(),
        signatures: Vec::new(),
        expires_at: Vec::new(),
        outcomes: Outcomes::default(),
        prune: None,
    })
}

/// The order a tenant's rows are locked in: by platform, then event id.
fn lock_order(key: &doorman_domain::ReceiptKey) -> (&'static str, &str) {
    (key.platform.as_str(), key.external_id.as_str())
}

/// Writes `batch` on `conn` (a connection to its node) in one transaction: its claims (as a
/// settle if `settle`: what nothing holds is claimed, and which claims hold their events is
/// read back), its fingerprints if `with_requests`, its outcomes; the rows of the answer. An
/// error before the commit rolls the transaction back; one at the commit is the caller's to
/// read (it may have committed).
pub(super) async fn write(
    conn: &mut AsyncPgConnection,
    batch: &NodeBatch<'_>,
    settle: bool,
    with_requests: bool,
) -> QueryResult<Vec<Row>> {
    // One round trip: the transaction, and the tenants it acts for.
    let begin = format!("BEGIN; SELECT public.doorman_set_local('app.tenant_ids', '{}')", batch.tenants);
    AnsiTransactionManager::begin_transaction_sql(&mut *conn, &begin).await?;
    match write_rows(conn, batch, settle, with_requests).await {
        Ok(rows) => {
            AnsiTransactionManager::commit_transaction(&mut *conn).await?;
            Ok(rows)
        }
        Err(error) => {
            // A rollback that fails leaves the connection broken, and the pool discards it.
            let _ = AnsiTransactionManager::rollback_transaction(&mut *conn).await;
            Err(error)
        }
    }
}

async fn write_rows(
    conn: &mut AsyncPgConnection,
    batch: &NodeBatch<'_>,
    settle: bool,
    with_requests: bool,
) -> QueryResult<Vec<Row>> {
    let mut answer = Vec::new();
    for tenant in &batch.by_tenant {
        if !tenant.claims.is_empty() {
            let claimed = tenant.claims_insert().load::<Row>(conn).await?;
            let claimed = if settle { tenant.claims_held().load::<Row>(conn).await? } else { claimed };
            if let Some(payloads) = tenant.payloads_insert(&claimed) {
                payloads.execute(conn).await?;
            }
            answer.extend(claimed);
        }
        if with_requests && !tenant.requests.is_empty() {
            tenant.expired_requests_delete().execute(conn).await?;
            answer.extend(tenant.requests_insert().load::<Row>(conn).await?);
        }
        if !tenant.outcomes.event_ids.is_empty() {
            tenant.outcomes_update().execute(conn).await?;
        }
        if tenant.prune.is_some() {
            answer.extend(tenant.prune_call().load::<Row>(conn).await?);
        }
    }
    Ok(answer)
}

const CLAIMS_INSERT: &str = "INSERT INTO public.messaging_event_receipts AS r \
    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at) VALUES ";
const CLAIMS_RETURNING: &str = " ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING \
    RETURNING 'claim'::text AS kind, r.claim_id AS id, 0::bigint AS n, NULL::text AS signature";

const PAYLOADS_INSERT: &str = "INSERT INTO public.messaging_event_payloads AS p \
    (tenant_id, platform, external_event_id, claimed_at, payload) VALUES ";
// A payload left by a receipt pruned away is replaced, as in the functions' forms.
const PAYLOADS_REPLACE: &str = " ON CONFLICT ON CONSTRAINT messaging_event_payloads_pkey DO UPDATE \
    SET claimed_at = EXCLUDED.claimed_at, payload = EXCLUDED.payload, leased_until = NULL";

const REQUESTS_INSERT: &str =
    "INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at) VALUES ";
const REQUESTS_RETURNING: &str = " ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING \
    RETURNING 'request'::text AS kind, r.tenant_id AS id, 0::bigint AS n, r.signature AS signature";

/// The outcomes, and with them the kept payloads: a completed event's released, a failed
/// one's lease dropped (so a replay may take it again), as `doorman_write_outcomes` does. The
/// tenant is bound once per table, which is what routes each part to the tenant's shard.
const OUTCOMES_UPDATE: [&str; 4] = [
    "WITH done AS ( \
        UPDATE public.messaging_event_receipts AS r \
           SET handled_at = coalesce(r.handled_at, u.handled_at), \
               failure_reason = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END, \
               failed_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END \
          FROM unnest(",
    ") AS u(platform, event_id, handled_at, reason, failed_at) \
         WHERE r.tenant_id = ",
    " AND r.platform = u.platform AND r.external_event_id = u.event_id \
        RETURNING r.platform, r.external_event_id, u.handled_at IS NOT NULL AS handled \
    ), released AS ( \
        DELETE FROM public.messaging_event_payloads AS p USING done \
         WHERE done.handled AND p.tenant_id = ",
    " AND p.platform = done.platform AND p.external_event_id = done.external_event_id \
    ) \
    UPDATE public.messaging_event_payloads AS p SET leased_until = NULL FROM done \
     WHERE NOT done.handled AND p.tenant_id = ",
];
const OUTCOMES_UPDATE_END: &str = " AND p.platform = done.platform AND p.external_event_id = done.external_event_id AND p.leased_until IS NOT NULL";

impl<'a> TenantRows<'a> {
    fn tenant(&self) -> Box<dyn Bind + '_> {
        bind::<SqlUuid, _>(&self.tenant)
    }

    /// The claims, one row each.
    fn claims_insert(&self) -> Kept<'_> {
        let rows = self.claims.iter().zip(&self.attempts).map(|(claim, attempt)| {
            let receipt = &claim.receipt;
            vec![
                self.tenant(),
                bind::<Text, _>(receipt.key.platform.as_str()),
                bind::<Text, _>(receipt.key.external_id.as_str()),
                bind::<SqlUuid, _>(receipt.claim.as_uuid()),
                bind::<Text, _>(receipt.event_type.as_str()),
                bind::<Integer, _>(attempt),
                bind::<Timestamptz, _>(&receipt.claimed_at),
            ]
        });
        values(CLAIMS_INSERT, rows, CLAIMS_RETURNING)
    }

    /// Which of the claims hold their events (a settle's answer): by claim id, which is one
    /// delivery's own.
    fn claims_held(&self) -> Kept<'_> {
        Kept(vec![
            Part::Sql(
                "SELECT 'claim'::text AS kind, r.claim_id AS id, 0::bigint AS n, NULL::text AS signature \
                   FROM public.messaging_event_receipts AS r WHERE r.tenant_id = ",
            ),
            Part::Bind(self.tenant()),
            Part::Sql(" AND r.external_event_id = ANY("),
            Part::Bind(bind::<Array<Text>, _>(&self.event_ids)),
            Part::Sql(") AND r.claim_id = ANY("),
            Part::Bind(bind::<Array<SqlUuid>, _>(&self.claim_ids)),
            Part::Sql(")"),
        ])
    }

    /// The payloads of the claims in `claimed` that keep one; `None` when none does.
    fn payloads_insert(&self, claimed: &[Row]) -> Option<Kept<'_>> {
        let held: std::collections::HashSet<Uuid> = claimed.iter().map(Row::id).collect();
        let mut rows = self
            .claims
            .iter()
            .filter(|claim| claim.payload.is_some() && held.contains(claim.receipt.claim.as_uuid()))
            .map(|claim| {
                let receipt = &claim.receipt;
                vec![
                    self.tenant(),
                    bind::<Text, _>(receipt.key.platform.as_str()),
                    bind::<Text, _>(receipt.key.external_id.as_str()),
                    bind::<Timestamptz, _>(&receipt.claimed_at),
                    bind::<Nullable<Text>, _>(&claim.payload),
                ]
            })
            .peekable();
        rows.peek()?;
        Some(values(PAYLOADS_INSERT, rows, PAYLOADS_REPLACE))
    }

    /// An expired fingerprint no longer refuses its request, as in the functions' forms.
    fn expired_requests_delete(&self) -> Kept<'_> {
        Kept(vec![
            Part::Sql("DELETE FROM public.messaging_request_replays AS r WHERE r.tenant_id = "),
            Part::Bind(self.tenant()),
            Part::Sql(" AND r.signature = ANY("),
            Part::Bind(bind::<Array<Text>, _>(&self.signatures)),
            Part::Sql(") AND r.expires_at < now()"),
        ])
    }

    fn requests_insert(&self) -> Kept<'_> {
        let rows = self.signatures.iter().zip(&self.expires_at).map(|(signature, expires_at)| {
            vec![self.tenant(), bind::<Text, _>(*signature), bind::<Timestamptz, _>(expires_at)]
        });
        values(REQUESTS_INSERT, rows, REQUESTS_RETURNING)
    }

    fn outcomes_update(&self) -> Kept<'_> {
        let of = &self.outcomes;
        let arrays: Vec<Box<dyn Bind + '_>> = vec![
            bind::<Array<Text>, _>(&of.platforms),
            bind::<Array<Text>, _>(&of.event_ids),
            bind::<Array<Nullable<Timestamptz>>, _>(&of.handled_at),
            bind::<Array<Nullable<Text>>, _>(&of.reasons),
            bind::<Array<Nullable<Timestamptz>>, _>(&of.failed_at),
        ];
        let mut parts = vec![Part::Sql(OUTCOMES_UPDATE[0])];
        for (i, array) in arrays.into_iter().enumerate() {
            if i > 0 {
                parts.push(Part::Sql(", "));
            }
            parts.push(Part::Bind(array));
        }
        for sql in &OUTCOMES_UPDATE[1..] {
            parts.push(Part::Sql(sql));
            parts.push(Part::Bind(self.tenant()));
        }
        parts.push(Part::Sql(OUTCOMES_UPDATE_END));
        Kept(parts)
    }

    /// The tenant's prune, its row `('outcome', tenant, pruned, NULL)` as the function's.
    fn prune_call(&self) -> Kept<'_> {
        let (expired_before, at_most) = self.prune.as_ref().expect("called only for a tenant that prunes");
        Kept(vec![
            Part::Sql("SELECT 'outcome'::text AS kind, "),
            Part::Bind(self.tenant()),
            Part::Sql(" AS id, public.doorman_prune_expired_receipts("),
            Part::Bind(self.tenant()),
            Part::Sql(", "),
            Part::Bind(bind::<Timestamptz, _>(expired_before)),
            Part::Sql(", "),
            Part::Bind(bind::<BigInt, _>(at_most)),
            Part::Sql(") AS n, NULL::text AS signature"),
        ])
    }
}

/// `head`, then each row's binds as `(…, …)`, the rows joined by commas, then `tail`: a
/// multi-row statement whose text depends only on the number of rows.
fn values<'b>(
    head: &'static str,
    rows: impl Iterator<Item = Vec<Box<dyn Bind + 'b>>>,
    tail: &'static str,
) -> Kept<'b> {
    let mut parts = vec![Part::Sql(head)];
    for (i, row) in rows.enumerate() {
        parts.push(Part::Sql(if i == 0 { "(" } else { ", (" }));
        for (j, value) in row.into_iter().enumerate() {
            if j > 0 {
                parts.push(Part::Sql(", "));
            }
            parts.push(Part::Bind(value));
        }
        parts.push(Part::Sql(")"));
    }
    parts.push(Part::Sql(tail));
    Kept(parts)
}

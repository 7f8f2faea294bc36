//! On Citus, a batch written on the node that holds its tenants' shards (ADR 24), in one
//! transaction of a few statements, in the tenants' shards' own tables (ADR 30).
//!
//! The transaction first holds the shards ([`HOLD`]: `doorman_hold_shards`, which takes the
//! lock Citus's own writes take on a shard's metadata and checks that the node still holds the
//! shard), then writes the shards' tables directly: plain PostgreSQL statements, prepared once
//! per connection and planned as PostgreSQL plans them, without Citus's router, its deparsing
//! of every statement with its values and its local planning at every call (measured: ~75% of
//! a worker's CPU on the hot path, ADR 30). A node that no longer holds a tenant's shard (a
//! move or split switched it since it was looked up) refuses the hold, and the batch is written
//! again in the same way through the distributed tables, which Citus routes, and its tenants
//! are looked up again. A tenant whose shards are not known is written that way too.
//!
//! Why a node at all: through the coordinator, the batch functions' Citus forms write row by
//! row (a multi-row `INSERT … SELECT FROM unnest(…)` into a distributed table is not routed:
//! Citus collects its rows and pushes them to the shards as intermediate results), and every
//! row's statement is planned on the coordinator and again on the worker. Here the node gets,
//! for the whole batch:
//!
//! - the claims: in the shards' tables, each tenant's in one `INSERT … SELECT FROM unnest(…)
//!   ON CONFLICT DO NOTHING RETURNING` (one text per shard, whatever the batch's size); through
//!   the distributed tables, every tenant's in one multi-row `INSERT … VALUES`, padded to a
//!   power of two rows so its text is one of a few, which Citus splits by shard. When settling,
//!   each tenant's claims that hold their events read back by claim id;
//! - the kept payloads of the claims that took their event (only tenants that keep them), the
//!   same way;
//! - the fingerprints: each tenant's expired ones deleted, then inserted the same way;
//! - the outcomes, tenant by tenant, with the payloads' release ([`TenantRows::keyed`] says how
//!   each route finds the rows), and a tenant's prune (at most once a second per tenant) as the
//!   function's call, through the distributed tables.
//!
//! The transaction names its tenants first (`app.tenant_ids`, by a `SET LOCAL`, which also
//! reaches another node should Citus forward a statement there), so
//! the shards' row-level security holds the statements to the batch's tenants as the
//! functions' forms do. The answers come back in the same rows as the functions' calls
//! ([`super::rows::Row`]), so reading them back is the same code.
//!
//! What never comes here (the receipt store sends it to the coordinator's writer instead,
//! [`super::Write::needs_the_coordinator`]): claims being settled after their answer, or
//! claimed long enough ago to be behind the sweep's watermark, which only the coordinator has.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AnsiTransactionManager, AsyncPgConnection, RunQueryDsl, TransactionManager};
use doorman_domain::Fingerprint;
use uuid::Uuid;

use super::super::claims::SealedClaim;
use super::super::outcomes::{PendingKind, PendingOutcome, status_column};
use super::super::placements::{NodeWrites, Shards};
use super::super::statement::{Bind, Kept, Part, bind, bind_owned};
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
    /// Its shards on the node, when known (from [`NodeWrites::shards_of`]).
    shards: Option<Shards>,
    claims: Vec<&'a SealedClaim>,
    attempts: Vec<i32>,
    /// The claims' platforms, event ids and claim ids, for a settle's read-back.
    platforms: Vec<&'static str>,
    event_ids: Vec<&'a str>,
    claim_ids: Vec<Uuid>,
    requests: Vec<&'a Fingerprint>,
    signatures: Vec<&'a str>,
    expires_at: Vec<DateTime<Utc>>,
    /// By platform.
    outcomes: Vec<Outcomes<'a>>,
    /// This tenant prunes its expired receipts with this batch: (expired before, at most).
    prune: Option<(DateTime<Utc>, i64)>,
}

/// A tenant's outcomes on one platform, as the statements' arrays: the completed events and
/// the failed ones, each with its values, and the attempts that are rows of their own.
struct Outcomes<'a> {
    platform: &'static str,
    handled: Vec<&'a str>,
    handled_at: Vec<DateTime<Utc>>,
    /// A first dispatch's start and status, kept on the receipt (none for a replay's).
    dispatched_at: Vec<Option<DateTime<Utc>>>,
    statuses: Vec<Option<i16>>,
    failed: Vec<&'a str>,
    reasons: Vec<&'a str>,
    failed_at: Vec<DateTime<Utc>>,
    attempts: AttemptRows<'a>,
}

/// Attempts written as rows: every failed dispatch and every replay, each kept even when the
/// same event also completed in the batch.
#[derive(Default)]
struct AttemptRows<'a> {
    event_ids: Vec<&'a str>,
    started_at: Vec<DateTime<Utc>>,
    ended_at: Vec<DateTime<Utc>>,
    replays: Vec<bool>,
    statuses: Vec<Option<i16>>,
    failures: Vec<Option<&'a str>>,
    reasons: Vec<Option<&'a str>>,
    answers: Vec<Option<&'a str>>,
}

impl<'a> AttemptRows<'a> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        event_id: &'a str,
        started_at: DateTime<Utc>,
        ended_at: DateTime<Utc>,
        replay: bool,
        status: Option<u16>,
        failure: Option<&'a str>,
        reason: Option<&'a str>,
        answer: Option<&'a str>,
    ) {
        self.event_ids.push(event_id);
        self.started_at.push(started_at);
        self.ended_at.push(ended_at);
        self.replays.push(replay);
        self.statuses.push(status.map(status_column));
        self.failures.push(failure);
        self.reasons.push(reason);
        self.answers.push(answer);
    }
}

impl<'a> NodeBatch<'a> {
    pub(super) fn of(rows: &BatchRows<'a>, node: &NodeWrites) -> Self {
        let mut by_tenant: BTreeMap<Uuid, TenantRows<'a>> = BTreeMap::new();
        let mut claims: Vec<&SealedClaim> = rows.claims.clone();
        claims.sort_by_key(|claim| lock_order(&claim.receipt.key));
        for claim in claims {
            let of = rows_of(&mut by_tenant, *claim.receipt.key.tenant.as_uuid());
            of.attempts.push(i32::try_from(claim.receipt.attempt).unwrap_or(i32::MAX));
            of.platforms.push(claim.receipt.key.platform.as_str());
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
            let tenant = rows_of(&mut by_tenant, *outcome.key.tenant.as_uuid());
            let platform = outcome.key.platform.as_str();
            let at = match tenant.outcomes.iter().position(|of| of.platform == platform) {
                Some(at) => at,
                None => {
                    tenant.outcomes.push(Outcomes::on(platform));
                    tenant.outcomes.len() - 1
                }
            };
            tenant.outcomes[at].push(outcome);
        }
        if let (prunes, Some(expired_before), Some(at_most)) = rows.outcome_rows.prunes() {
            for id in prunes {
                rows_of(&mut by_tenant, *id).prune = Some((expired_before, at_most));
            }
        }
        for (id, tenant) in &mut by_tenant {
            tenant.shards = node.shards_of(*id);
        }
        let tenants = by_tenant.keys().map(Uuid::to_string).collect::<Vec<_>>().join(",");
        Self { tenants: format!("{{{tenants}}}"), by_tenant: by_tenant.into_values().collect() }
    }

    /// The route the batch is written by first: in its shards' tables when every tenant's
    /// shards on the node are known, else through the distributed tables.
    fn first_route(&self) -> Route {
        if self.by_tenant.iter().all(|tenant| tenant.shards.is_some()) {
            Route::Shards
        } else {
            Route::Distributed
        }
    }

    /// The shards [`HOLD`] takes: each tenant's shard of each table the batch may write.
    fn held_shards(&self) -> String {
        let ids: Vec<String> = self
            .by_tenant
            .iter()
            .filter_map(|tenant| tenant.shards)
            .flat_map(|shards| [shards.receipts, shards.payloads, shards.requests, shards.attempts])
            .map(|id| id.to_string())
            .collect();
        format!("{{{}}}", ids.join(","))
    }
}

impl<'a> Outcomes<'a> {
    fn on(platform: &'static str) -> Self {
        Self {
            platform,
            handled: Vec::new(),
            handled_at: Vec::new(),
            dispatched_at: Vec::new(),
            statuses: Vec::new(),
            failed: Vec::new(),
            reasons: Vec::new(),
            failed_at: Vec::new(),
            attempts: AttemptRows::default(),
        }
    }

    /// Adds `outcome`. An event met twice in a batch is written once: completed if either
    /// says so (as the outcomes, written in order, leave it), else with its first failure.
    fn push(&mut self, outcome: &'a PendingOutcome) {
        let event_id = outcome.key.external_id.as_str();
        match &outcome.kind {
            PendingKind::Handled { at, started_at, replay: true, status, .. } => {
                self.attempts.push(event_id, *started_at, *at, true, Some(*status), None, None, None);
            }
            PendingKind::Failed(attempt) => self.attempts.push(
                event_id,
                attempt.started_at,
                attempt.ended_at,
                attempt.replay,
                attempt.status,
                attempt.failure.map(|kind| kind.as_str()),
                attempt.reason.as_deref(),
                attempt.answer.as_deref(),
            ),
            PendingKind::Handled { .. } => {}
        }
        if self.handled.contains(&event_id) {
            return;
        }
        match &outcome.kind {
            PendingKind::Handled { at, started_at, status, replay, .. } => {
                if let Some(at) = self.failed.iter().position(|id| *id == event_id) {
                    self.failed.remove(at);
                    self.reasons.remove(at);
                    self.failed_at.remove(at);
                }
                self.handled.push(event_id);
                self.handled_at.push(*at);
                self.dispatched_at.push((!replay).then_some(*started_at));
                self.statuses.push((!replay).then(|| status_column(*status)));
            }
            PendingKind::Failed(_) if self.failed.contains(&event_id) => {}
            PendingKind::Failed(attempt) => {
                self.failed.push(event_id);
                self.reasons.push(attempt.reason.as_deref().unwrap_or("failed"));
                self.failed_at.push(attempt.ended_at);
            }
        }
    }
}

fn rows_of<'m, 'a>(by_tenant: &'m mut BTreeMap<Uuid, TenantRows<'a>>, id: Uuid) -> &'m mut TenantRows<'a> {
    by_tenant.entry(id).or_insert_with(|| TenantRows {
        tenant: id,
        shards: None,
        claims: Vec::new(),
        attempts: Vec::new(),
        platforms: Vec::new(),
        event_ids: Vec::new(),
        claim_ids: Vec::new(),
        requests: Vec::new(),
        signatures: Vec::new(),
        expires_at: Vec::new(),
        outcomes: Vec::new(),
        prune: None,
    })
}

/// Tenants whose claims (or fingerprints, or kept payloads) share one statement, and the
/// shards it writes (`None`: the distributed tables).
struct Group<'b> {
    tenants: Vec<&'b TenantRows<'b>>,
    shards: Option<Shards>,
}

impl<'b> NodeBatch<'b> {
    /// The tenants' rows as the multi-row statements take them: through the distributed
    /// tables, all tenants in one statement (Citus splits it by shard and runs each part on
    /// this node); in the shards' tables, a statement per tenant, in its own shard's table.
    fn groups(&'b self, route: Route) -> Vec<Group<'b>> {
        match route {
            Route::Distributed => vec![Group { tenants: self.by_tenant.iter().collect(), shards: None }],
            Route::Shards => self
                .by_tenant
                .iter()
                .map(|tenant| Group { tenants: vec![tenant], shards: tenant.shards })
                .collect(),
        }
    }
}

/// `tenants`' claims in one statement into the receipts (their shard's table, given `shards`),
/// one row each, in lock order (tenant, then platform and event id).
fn claims_insert<'b>(tenants: &[&'b TenantRows<'b>], shards: Option<Shards>) -> Option<Kept<'b>> {
    if let (Some(shards), [tenant]) = (shards, tenants) {
        return (!tenant.claims.is_empty()).then(|| tenant.claims_into(shards));
    }
    let rows: Vec<_> = tenants
        .iter()
        .flat_map(|tenant| {
            tenant.claims.iter().zip(&tenant.attempts).map(move |(c, a)| (&tenant.tenant, c, a))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let rows = padded(rows).into_iter().map(|(tenant, claim, attempt)| {
        let receipt = &claim.receipt;
        vec![
            bind::<SqlUuid, _>(tenant),
            bind::<Text, _>(receipt.key.platform.as_str()),
            bind::<Text, _>(receipt.key.external_id.as_str()),
            bind::<SqlUuid, _>(receipt.claim.as_uuid()),
            bind::<Text, _>(receipt.event_type.as_str()),
            bind::<Integer, _>(attempt),
            bind::<Timestamptz, _>(&receipt.claimed_at),
        ]
    });
    Some(values(Table::Receipts.named(shards), CLAIMS_COLUMNS, rows, CLAIMS_RETURNING))
}

/// The payloads of `tenants`' claims in `inserted` that keep one, as the claims, in statements
/// of a power of two rows each (their `ON CONFLICT DO UPDATE` may not meet a row twice, so they
/// are not padded as the claims are): none when no claim keeps one.
fn payloads_inserts<'b>(
    tenants: &[&'b TenantRows<'b>],
    shards: Option<Shards>,
    inserted: &[Row],
) -> Vec<Kept<'b>> {
    let held: std::collections::HashSet<Uuid> = inserted.iter().map(Row::id).collect();
    let kept: Vec<(&Uuid, &&SealedClaim)> = tenants
        .iter()
        .flat_map(|tenant| tenant.claims.iter().map(move |claim| (&tenant.tenant, claim)))
        .filter(|(_, claim)| claim.payload.is_some() && held.contains(claim.receipt.claim.as_uuid()))
        .collect();
    if let (Some(shards), false) = (shards, kept.is_empty()) {
        return vec![payloads_into(shards, &kept)];
    }
    let mut statements = Vec::new();
    let mut rest = kept.as_slice();
    while !rest.is_empty() {
        let (chunk, after) = rest.split_at(1 << rest.len().ilog2());
        rest = after;
        let rows = chunk.iter().map(|(tenant, claim)| {
            let receipt = &claim.receipt;
            vec![
                bind::<SqlUuid, _>(*tenant),
                bind::<Text, _>(receipt.key.platform.as_str()),
                bind::<Text, _>(receipt.key.external_id.as_str()),
                bind::<Timestamptz, _>(&receipt.claimed_at),
                bind::<Nullable<Text>, _>(&claim.payload),
            ]
        });
        statements.push(values(Table::Payloads.named(shards), PAYLOADS_COLUMNS, rows, PAYLOADS_REPLACE));
    }
    statements
}

/// `tenants`' fingerprints in one statement, as the claims.
fn requests_insert<'b>(tenants: &[&'b TenantRows<'b>], shards: Option<Shards>) -> Option<Kept<'b>> {
    if let (Some(shards), [tenant]) = (shards, tenants) {
        return (!tenant.signatures.is_empty()).then(|| tenant.requests_into(shards));
    }
    let rows: Vec<_> = tenants
        .iter()
        .flat_map(|tenant| {
            tenant.signatures.iter().zip(&tenant.expires_at).map(move |(s, e)| (&tenant.tenant, s, e))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let rows = padded(rows).into_iter().map(|(tenant, signature, expires_at)| {
        vec![bind::<SqlUuid, _>(tenant), bind::<Text, _>(*signature), bind::<Timestamptz, _>(expires_at)]
    });
    Some(values(Table::Requests.named(shards), REQUESTS_COLUMNS, rows, REQUESTS_RETURNING))
}

/// In a shard's table (one tenant's, [`Route::Shards`]), each multi-row insert is one
/// `INSERT … SELECT` from the arrays, whatever its number of rows: a single text per shard and
/// kind, where the distributed tables' `VALUES` forms (which Citus needs to route each row) are
/// one text per size, each kept prepared on every connection (a 256-row one holds ~1.2 MB of a
/// node backend's memory), for every shard a connection writes.
impl<'a> TenantRows<'a> {
    fn claims_into(&self, shards: Shards) -> Kept<'_> {
        let event_types: Vec<&str> =
            self.claims.iter().map(|claim| claim.receipt.event_type.as_str()).collect();
        let claimed_at: Vec<DateTime<Utc>> =
            self.claims.iter().map(|claim| claim.receipt.claimed_at).collect();
        Kept(vec![
            Part::Sql("INSERT INTO "),
            Table::Receipts.named(Some(shards)),
            Part::Sql(
                " AS r (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at) SELECT ",
            ),
            Part::Bind(self.tenant()),
            Part::Sql("::uuid, u.* FROM unnest("),
            Part::Bind(bind::<Array<Text>, _>(&self.platforms)),
            Part::Sql("::text[], "),
            Part::Bind(bind::<Array<Text>, _>(&self.event_ids)),
            Part::Sql("::text[], "),
            Part::Bind(bind::<Array<SqlUuid>, _>(&self.claim_ids)),
            Part::Sql("::uuid[], "),
            Part::Bind(bind_owned::<Array<Text>, _>(event_types)),
            Part::Sql("::text[], "),
            Part::Bind(bind::<Array<Integer>, _>(&self.attempts)),
            Part::Sql("::int4[], "),
            Part::Bind(bind_owned::<Array<Timestamptz>, _>(claimed_at)),
            Part::Sql("::timestamptz[]) AS u"),
            Part::Sql(CLAIMS_RETURNING),
        ])
    }

    fn requests_into(&self, shards: Shards) -> Kept<'_> {
        Kept(vec![
            Part::Sql("INSERT INTO "),
            Table::Requests.named(Some(shards)),
            Part::Sql(" AS r (tenant_id, signature, expires_at) SELECT "),
            Part::Bind(self.tenant()),
            Part::Sql("::uuid, u.* FROM unnest("),
            Part::Bind(bind::<Array<Text>, _>(&self.signatures)),
            Part::Sql("::text[], "),
            Part::Bind(bind::<Array<Timestamptz>, _>(&self.expires_at)),
            Part::Sql("::timestamptz[]) AS u"),
            Part::Sql(REQUESTS_RETURNING),
        ])
    }
}

/// The kept payloads of one tenant's claims, in its shard's table, as the claims (above).
fn payloads_into<'b>(shards: Shards, kept: &[(&'b Uuid, &&'b SealedClaim)]) -> Kept<'b> {
    let tenant = kept.first().map(|(tenant, _)| **tenant).unwrap_or_default();
    let platforms: Vec<&str> = kept.iter().map(|(_, claim)| claim.receipt.key.platform.as_str()).collect();
    let event_ids: Vec<&str> = kept.iter().map(|(_, claim)| claim.receipt.key.external_id.as_str()).collect();
    let claimed_at: Vec<DateTime<Utc>> = kept.iter().map(|(_, claim)| claim.receipt.claimed_at).collect();
    let payloads: Vec<Option<&str>> = kept.iter().map(|(_, claim)| claim.payload.as_deref()).collect();
    Kept(vec![
        Part::Sql("INSERT INTO "),
        Table::Payloads.named(Some(shards)),
        Part::Sql(" AS p (tenant_id, platform, external_event_id, claimed_at, payload) SELECT "),
        Part::Bind(bind_owned::<SqlUuid, _>(tenant)),
        Part::Sql("::uuid, u.* FROM unnest("),
        Part::Bind(bind_owned::<Array<Text>, _>(platforms)),
        Part::Sql("::text[], "),
        Part::Bind(bind_owned::<Array<Text>, _>(event_ids)),
        Part::Sql("::text[], "),
        Part::Bind(bind_owned::<Array<Timestamptz>, _>(claimed_at)),
        Part::Sql("::timestamptz[], "),
        Part::Bind(bind_owned::<Array<Nullable<Text>>, _>(payloads)),
        Part::Sql("::text[]) AS u"),
        Part::Sql(PAYLOADS_REPLACE),
    ])
}

/// How a batch's statements name its rows' tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// The tenants' shards' own tables on this node, held first ([`HOLD`]).
    Shards,
    /// The distributed tables, which Citus routes to the shards wherever they are.
    Distributed,
}

/// A table a node batch writes.
#[derive(Debug, Clone, Copy)]
enum Table {
    Receipts,
    Payloads,
    Requests,
    Attempts,
}

impl Table {
    fn distributed(self) -> &'static str {
        match self {
            Self::Receipts => "public.messaging_event_receipts",
            Self::Payloads => "public.messaging_event_payloads",
            Self::Requests => "public.messaging_request_replays",
            Self::Attempts => "public.messaging_event_attempts",
        }
    }

    /// The distributed table, or, given its tenant's shards, that tenant's shard of it (its
    /// name is Doorman's own text: the table's and a number from Citus's metadata).
    fn named(self, shards: Option<Shards>) -> Part<'static> {
        let Some(shards) = shards else {
            return Part::Sql(self.distributed());
        };
        let shard = match self {
            Self::Receipts => shards.receipts,
            Self::Payloads => shards.payloads,
            Self::Requests => shards.requests,
            Self::Attempts => shards.attempts,
        };
        Part::Text(format!("{}_{shard}", self.distributed()))
    }
}

/// The order a tenant's rows are locked in: by platform, then event id.
fn lock_order(key: &doorman_domain::ReceiptKey) -> (&'static str, &str) {
    (key.platform.as_str(), key.external_id.as_str())
}

/// What a node batch's transaction runs first, in shards' tables ([`Route::Shards`]), after
/// naming its tenants: the hold of their shards.
const HOLD: &str = "public.doorman_hold_shards";

/// What `doorman_hold_shards` says when the node no longer holds a shard (its own words, never
/// translated).
const NOT_HELD: &str = "doorman_hold_shards: a shard is no longer on this node";

/// Writes `batch` on `conn` (a connection to its node) in one transaction: its claims (as a
/// settle if `settle`: what nothing holds is claimed, and which claims hold their events is
/// read back), its fingerprints if `with_requests`, its outcomes; the rows of the answer. In
/// the tenants' shards' tables when they are known, else (or when the node no longer holds
/// one of them, whose tenants `node` then forgets) through the distributed tables. An error
/// before the commit rolls the transaction back; one at the commit is the caller's to read (it
/// may have committed).
pub(super) async fn write(
    conn: &mut AsyncPgConnection,
    batch: &NodeBatch<'_>,
    settle: bool,
    with_requests: bool,
    node: &NodeWrites,
) -> QueryResult<Vec<Row>> {
    let mut route = batch.first_route();
    if route == Route::Shards {
        match begin(conn, batch, Route::Shards).await {
            Ok(()) => {
                let written = write_rows(conn, batch, settle, with_requests, route).await;
                return commit(conn, written).await;
            }
            // Only this node's own answer that it no longer holds a shard sends the batch the
            // other way: any other error (a lock not granted in time while a move switches,
            // say) would meet the same in the distributed tables, whose writes take the same
            // lock, after the batch's time; it is the batch's answer, as for any statement.
            Err(diesel::result::Error::DatabaseError(_, info)) if info.message().starts_with(NOT_HELD) => {
                tracing::info!(
                    tenants = %batch.tenants,
                    "a Citus node no longer holds a tenant's shards (moved or split): the batch goes through the distributed tables, and its tenants are looked up again"
                );
                node.forget(batch.by_tenant.iter().map(|tenant| tenant.tenant));
                route = Route::Distributed;
            }
            Err(error) => return Err(error),
        }
    }
    begin(conn, batch, route).await?;
    let written = write_rows(conn, batch, settle, with_requests, route).await;
    commit(conn, written).await
}

/// Opens the batch's transaction on `conn` in one round trip, naming the tenants it acts for
/// (the shards' row-level security reads them; the value is UUIDs written here). Nothing is left
/// open when it fails. (The planner settings are the session's: `pool::Purpose::NodeWrites`.)
///
/// - In the shards' tables, read committed whatever the login's default (the hold's placement
///   check must see a move that committed while it waited for the lock, which a repeatable-read
///   snapshot taken before the wait would not), and the tenants named by `set_config`, which
///   stays in this backend: nothing in this route leaves the node, and Citus would send a `SET
///   LOCAL` on with the whole query string it came in, the hold included.
/// - Through the distributed tables, by a `SET LOCAL`, as `doorman_set_local` makes on Citus,
///   which Citus also sends to any other node the transaction reaches.
async fn begin(conn: &mut AsyncPgConnection, batch: &NodeBatch<'_>, route: Route) -> QueryResult<()> {
    let begin = match route {
        Route::Shards => format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT set_config('app.tenant_ids', '{}', true), {HOLD}('{}')",
            batch.tenants,
            batch.held_shards()
        ),
        Route::Distributed => format!("BEGIN; SET LOCAL app.tenant_ids = '{}'", batch.tenants),
    };
    let begun = AnsiTransactionManager::begin_transaction_sql(&mut *conn, &begin).await;
    if begun.is_err() {
        // The `BEGIN` may have run and the rest failed: the session is then in an aborted
        // transaction that Diesel does not know is open, and the next unit on this connection
        // would fail. Ended here (or, if even that fails, the connection is broken and dropped).
        let _ = diesel_async::SimpleAsyncConnection::batch_execute(&mut *conn, "ROLLBACK").await;
    }
    begun
}

/// Commits the transaction whose statements answered `written`, or rolls it back after an
/// error (a rollback that fails leaves the connection broken, and the pool discards it).
async fn commit(conn: &mut AsyncPgConnection, written: QueryResult<Vec<Row>>) -> QueryResult<Vec<Row>> {
    match written {
        Ok(rows) => {
            AnsiTransactionManager::commit_transaction(&mut *conn).await?;
            Ok(rows)
        }
        Err(error) => {
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
    route: Route,
) -> QueryResult<Vec<Row>> {
    let mut answer = Vec::new();
    for Group { tenants, shards } in batch.groups(route) {
        let Some(claims) = claims_insert(&tenants, shards) else { continue };
        let inserted = claims.load::<Row>(conn).await?;
        // Payloads only for the receipts this statement made: a settle's claims that were
        // already held keep theirs (and its lease) as they are.
        for payloads in payloads_inserts(&tenants, shards, &inserted) {
            payloads.execute(conn).await?;
        }
        if settle {
            for tenant in tenants.iter().filter(|tenant| !tenant.claims.is_empty()) {
                answer.extend(tenant.claims_held(route).load::<Row>(conn).await?);
            }
        } else {
            answer.extend(inserted);
        }
    }
    if with_requests {
        for Group { tenants, shards } in batch.groups(route) {
            let Some(insert) = requests_insert(&tenants, shards) else { continue };
            for tenant in tenants.iter().filter(|tenant| !tenant.requests.is_empty()) {
                tenant.expired_requests_delete(route).execute(conn).await?;
            }
            answer.extend(insert.load::<Row>(conn).await?);
        }
    }
    for tenant in &batch.by_tenant {
        for outcomes in &tenant.outcomes {
            if !outcomes.failed.is_empty() {
                tenant.failures_update(outcomes, route).execute(conn).await?;
                tenant.payloads_unlease(outcomes, route).execute(conn).await?;
            }
            if !outcomes.attempts.event_ids.is_empty() {
                tenant.attempts_insert(outcomes, route).execute(conn).await?;
            }
            if !outcomes.handled.is_empty() {
                tenant.completions_update(outcomes, route).execute(conn).await?;
                tenant.payloads_release(outcomes, route).execute(conn).await?;
            }
        }
        if tenant.prune.is_some() {
            answer.extend(tenant.prune_call().load::<Row>(conn).await?);
        }
    }
    Ok(answer)
}

// Each `ON CONFLICT` names its primary key by its columns: a shard's constraints carry the
// shard's id in their names.
const CLAIMS_COLUMNS: &str = " AS r (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at) VALUES ";
const CLAIMS_RETURNING: &str = " ON CONFLICT (tenant_id, platform, external_event_id) DO NOTHING \
    RETURNING 'claim'::text AS kind, r.claim_id AS id, 0::bigint AS n, NULL::text AS signature";

const PAYLOADS_COLUMNS: &str = " AS p (tenant_id, platform, external_event_id, claimed_at, payload) VALUES ";
// A payload left by a receipt pruned away is replaced, as in the functions' forms.
const PAYLOADS_REPLACE: &str = " ON CONFLICT (tenant_id, platform, external_event_id) DO UPDATE \
    SET claimed_at = EXCLUDED.claimed_at, payload = EXCLUDED.payload, leased_until = NULL";

const REQUESTS_COLUMNS: &str = " AS r (tenant_id, signature, expires_at) VALUES ";
const REQUESTS_RETURNING: &str = " ON CONFLICT (tenant_id, signature) DO NOTHING \
    RETURNING 'request'::text AS kind, r.tenant_id AS id, 0::bigint AS n, r.signature AS signature";

/// The outcomes, as `doorman_write_outcomes` writes them: a completion sets `handled_at`, a
/// failure its reason and time, each only on a receipt not handled yet, by an `UPDATE … FROM
/// unnest(…)`, with the completed events' kept payloads released and the failed ones' leases
/// dropped.
///
/// In the shards' tables ([`Route::Shards`]), as the plain functions: the rows are found by
/// joining the whole key with the arrays (the tenant and platform repeated in them), so the
/// only plan that does not read a whole shard probes the primary key once per event, whatever
/// the table's statistics say (a fresh tenant's shard has none; with the tenant and platform
/// as constants, the planner read all of the tenant's receipts at every batch: ADR 30).
///
/// Through the distributed tables, naming the tenant, which Citus needs to route the statement
/// to its shard (its router plans it at each run); the event ids are also given as
/// `external_event_id = ANY(…)`, so the primary key's index finds the batch's rows when the
/// statistics are right. Not the single-table form with each row's value picked by
/// `array_position`, whose plan Citus could keep: its fast path crashed the worker's backend on
/// it (Citus 13.2.2, signal 11, under load). ADR 24 has the forms measured.
impl<'a> TenantRows<'a> {
    fn tenant(&self) -> Box<dyn Bind + '_> {
        bind::<SqlUuid, _>(&self.tenant)
    }

    fn table(&self, table: Table, route: Route) -> Part<'static> {
        table.named(if route == Route::Shards { self.shards } else { None })
    }

    fn completions_update(&self, of: &'a Outcomes<'a>, route: Route) -> Kept<'_> {
        let mut parts = vec![
            Part::Sql("UPDATE "),
            self.table(Table::Receipts, route),
            Part::Sql(
                " AS r SET handled_at = u.handled_at, dispatched_at = u.dispatched_at, answer_status = u.status FROM ",
            ),
        ];
        parts.extend(self.keyed(
            of,
            &of.handled,
            vec![
                bind::<Array<Timestamptz>, _>(&of.handled_at),
                bind::<Array<Nullable<Timestamptz>>, _>(&of.dispatched_at),
                bind::<Array<Nullable<SmallInt>>, _>(&of.statuses),
            ],
            "handled_at, dispatched_at, status",
            "r",
            route,
        ));
        parts.push(Part::Sql(" AND r.handled_at IS NULL"));
        Kept(parts)
    }

    fn failures_update(&self, of: &'a Outcomes<'a>, route: Route) -> Kept<'_> {
        let mut parts = vec![
            Part::Sql("UPDATE "),
            self.table(Table::Receipts, route),
            Part::Sql(" AS r SET failure_reason = u.reason, failed_at = u.failed_at FROM "),
        ];
        parts.extend(self.keyed(
            of,
            &of.failed,
            vec![bind::<Array<Text>, _>(&of.reasons), bind::<Array<Timestamptz>, _>(&of.failed_at)],
            "reason, failed_at",
            "r",
            route,
        ));
        parts.push(Part::Sql(" AND r.handled_at IS NULL"));
        Kept(parts)
    }

    /// The completed events' kept payloads, released.
    fn payloads_release(&self, of: &'a Outcomes<'a>, route: Route) -> Kept<'_> {
        let mut parts = vec![Part::Sql("DELETE FROM "), self.table(Table::Payloads, route)];
        parts.extend(self.payloads_of(of, &of.handled, " AS p USING ", " AS p WHERE ", route));
        Kept(parts)
    }

    /// The failed events' payloads' leases, dropped.
    fn payloads_unlease(&self, of: &'a Outcomes<'a>, route: Route) -> Kept<'_> {
        let mut parts = vec![Part::Sql("UPDATE "), self.table(Table::Payloads, route)];
        parts.extend(self.payloads_of(
            of,
            &of.failed,
            " AS p SET leased_until = NULL FROM ",
            " AS p SET leased_until = NULL WHERE ",
            route,
        ));
        parts.push(Part::Sql(" AND p.leased_until IS NOT NULL"));
        Kept(parts)
    }

    /// The kept payloads of this tenant's `event_ids` on `of`'s platform, after the statement's
    /// head: in its shard's table joined by the whole key as the receipts are (`joined`, then
    /// [`TenantRows::keyed`]); through the distributed table as a single-table condition
    /// (`filtered`), whose plan Citus keeps.
    fn payloads_of(
        &self,
        of: &'a Outcomes<'a>,
        event_ids: &'a Vec<&'a str>,
        joined: &'static str,
        filtered: &'static str,
        route: Route,
    ) -> Vec<Part<'_>> {
        if route == Route::Shards {
            let mut parts = vec![Part::Sql(joined)];
            parts.extend(self.keyed(of, event_ids, Vec::new(), "", "p", route));
            return parts;
        }
        vec![
            Part::Sql(filtered),
            Part::Sql("p.tenant_id = "),
            Part::Bind(self.tenant()),
            Part::Sql(" AND p.platform = "),
            Part::Bind(bind::<Text, _>(of.platform)),
            Part::Sql(" AND p.external_event_id = ANY("),
            Part::Bind(bind::<Array<Text>, _>(event_ids)),
            Part::Sql(")"),
        ]
    }

    /// `unnest(…) AS u(…) WHERE …`: the rows of `alias` (`r` or `p`) of this tenant on `of`'s
    /// platform with `event_ids`, joined with them and with the arrays `values` (named
    /// `columns`, in `u`), as the module's routes find them (above).
    fn keyed(
        &self,
        of: &'a Outcomes<'a>,
        event_ids: &'a Vec<&'a str>,
        values: Vec<Box<dyn Bind + 'a>>,
        columns: &'static str,
        alias: &'static str,
        route: Route,
    ) -> Vec<Part<'_>> {
        let mut parts = vec![Part::Sql("unnest(")];
        if route == Route::Shards {
            parts.extend([
                Part::Sql("array_fill("),
                Part::Bind(self.tenant()),
                Part::Sql("::uuid, ARRAY[cardinality("),
                Part::Bind(bind::<Array<Text>, _>(event_ids)),
                Part::Sql("::text[])]), array_fill("),
                Part::Bind(bind::<Text, _>(of.platform)),
                Part::Sql("::text, ARRAY[cardinality("),
                Part::Bind(bind::<Array<Text>, _>(event_ids)),
                Part::Sql("::text[])]), "),
            ]);
        }
        parts.push(Part::Bind(bind::<Array<Text>, _>(event_ids)));
        for value in values {
            parts.push(Part::Sql(", "));
            parts.push(Part::Bind(value));
        }
        let (named, comma) = (
            if route == Route::Shards { "tenant, platform, event_id" } else { "event_id" },
            if columns.is_empty() { "" } else { ", " },
        );
        parts.push(Part::Text(format!(") AS u({named}{comma}{columns}) WHERE ")));
        if route == Route::Shards {
            parts.push(Part::Text(format!(
                "{alias}.tenant_id = u.tenant AND {alias}.platform = u.platform AND {alias}.external_event_id = u.event_id"
            )));
        } else {
            parts.extend([
                Part::Text(format!("{alias}.tenant_id = ")),
                Part::Bind(self.tenant()),
                Part::Text(format!(" AND {alias}.platform = ")),
                Part::Bind(bind::<Text, _>(of.platform)),
                Part::Text(format!(" AND {alias}.external_event_id = ANY(")),
                Part::Bind(bind::<Array<Text>, _>(event_ids)),
                Part::Text(format!(") AND {alias}.external_event_id = u.event_id")),
            ]);
        }
        parts
    }

    /// The attempts that are rows of their own (failures, replays), as
    /// `doorman_write_outcomes` writes them: the same attempt written again is one.
    fn attempts_insert(&self, of: &'a Outcomes<'a>, route: Route) -> Kept<'_> {
        let rows = &of.attempts;
        Kept(vec![
            Part::Sql("INSERT INTO "),
            self.table(Table::Attempts, route),
            Part::Sql(
                " AS a (tenant_id, platform, external_event_id, \
                 started_at, ended_at, replay, status, failure, reason, answer) SELECT ",
            ),
            Part::Bind(self.tenant()),
            Part::Sql(", "),
            Part::Bind(bind::<Text, _>(of.platform)),
            Part::Sql(", u.* FROM unnest("),
            Part::Bind(bind::<Array<Text>, _>(&rows.event_ids)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Timestamptz>, _>(&rows.started_at)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Timestamptz>, _>(&rows.ended_at)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Bool>, _>(&rows.replays)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Nullable<SmallInt>>, _>(&rows.statuses)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Nullable<Text>>, _>(&rows.failures)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Nullable<Text>>, _>(&rows.reasons)),
            Part::Sql(", "),
            Part::Bind(bind::<Array<Nullable<Text>>, _>(&rows.answers)),
            Part::Sql(
                ") AS u(event_id, started_at, ended_at, replay, status, failure, reason, answer) \
                 ON CONFLICT (tenant_id, platform, external_event_id, started_at) DO NOTHING",
            ),
        ])
    }

    /// Which of the claims hold their events (a settle's answer): by claim id, which is one
    /// delivery's own.
    fn claims_held(&self, route: Route) -> Kept<'_> {
        Kept(vec![
            Part::Sql(
                "SELECT 'claim'::text AS kind, r.claim_id AS id, 0::bigint AS n, NULL::text AS signature FROM ",
            ),
            self.table(Table::Receipts, route),
            Part::Sql(" AS r WHERE r.tenant_id = "),
            Part::Bind(self.tenant()),
            Part::Sql(" AND r.platform = ANY("),
            Part::Bind(bind::<Array<Text>, _>(&self.platforms)),
            Part::Sql(") AND r.external_event_id = ANY("),
            Part::Bind(bind::<Array<Text>, _>(&self.event_ids)),
            Part::Sql(") AND r.claim_id = ANY("),
            Part::Bind(bind::<Array<SqlUuid>, _>(&self.claim_ids)),
            Part::Sql(")"),
        ])
    }

    /// An expired fingerprint no longer refuses its request, as in the functions' forms.
    fn expired_requests_delete(&self, route: Route) -> Kept<'_> {
        Kept(vec![
            Part::Sql("DELETE FROM "),
            self.table(Table::Requests, route),
            Part::Sql(" AS r WHERE r.tenant_id = "),
            Part::Bind(self.tenant()),
            Part::Sql(" AND r.signature = ANY("),
            Part::Bind(bind::<Array<Text>, _>(&self.signatures)),
            Part::Sql(") AND r.expires_at < now()"),
        ])
    }

    /// The tenant's prune, its row `('outcome', tenant, pruned, NULL)` as the function's: the
    /// function's own statements, through the distributed tables (at most once a second).
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

/// `INSERT INTO {table}{columns}`, then each row's binds as `(…, …)`, the rows joined by
/// commas, then `tail`: a multi-row statement whose text depends only on its table and its
/// number of rows.
fn values<'b>(
    table: Part<'static>,
    columns: &'static str,
    rows: impl Iterator<Item = Vec<Box<dyn Bind + 'b>>>,
    tail: &'static str,
) -> Kept<'b> {
    let mut parts = vec![Part::Sql("INSERT INTO "), table, Part::Sql(columns)];
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

/// `rows`, the last one repeated up to the next power of two: a multi-row statement's text
/// depends on its number of rows, and each text is a statement prepared on every connection
/// (with its plan kept by Citus), so a batch of up to 256 rows has 9 texts, not 256. Only for
/// `ON CONFLICT DO NOTHING`, where a repeated row is skipped (it conflicts with its first) and
/// returns nothing.
fn padded<T: Clone>(mut rows: Vec<T>) -> Vec<T> {
    if let Some(last) = rows.last().cloned() {
        rows.resize(rows.len().next_power_of_two(), last);
    }
    rows
}

#[cfg(test)]
mod tests {
    use doorman_domain::{DispatchError, ExternalEventId, Platform, ReceiptKey, TenantId};

    use super::*;

    #[test]
    fn rows_are_padded_with_the_last_to_the_next_power_of_two() {
        assert_eq!(padded(vec![1]), vec![1]);
        assert_eq!(padded(vec![1, 2, 3]), vec![1, 2, 3, 3]);
        assert_eq!(padded(vec![1, 2, 3, 4, 5]), vec![1, 2, 3, 4, 5, 5, 5, 5]);
        assert!(padded(Vec::<u8>::new()).is_empty());
    }

    fn outcome(event: &str, handled: bool) -> PendingOutcome {
        let key = ReceiptKey {
            tenant: TenantId::generate(),
            platform: Platform::Slack,
            external_id: ExternalEventId::new(event).unwrap(),
        };
        let at = chrono::Utc::now();
        let kind = if handled {
            PendingKind::Handled {
                at,
                started_at: at,
                status: 200,
                replay: false,
                expired_before: at,
                prune_batch: 1,
            }
        } else {
            let error = DispatchError::Rejected { status: 500, answer: Some(format!("failed {event}")) };
            PendingKind::Failed(error.attempt(at, at, false))
        };
        PendingOutcome { key, kind }
    }

    #[test]
    fn an_event_met_twice_in_a_batch_is_written_once_completed_if_either_says_so() {
        let (fail_a, done_a, fail_b, fail_b_again, done_c, done_c_again) = (
            outcome("a", false),
            outcome("a", true),
            outcome("b", false),
            outcome("b", false),
            outcome("c", true),
            outcome("c", true),
        );
        let mut of = Outcomes::on("slack");
        for each in [&fail_a, &done_a, &fail_b, &fail_b_again, &done_c, &done_c_again] {
            of.push(each);
        }
        assert_eq!(of.handled, vec!["a", "c"]);
        assert_eq!(of.failed, vec!["b"]);
        assert_eq!(of.reasons, vec!["agent answered HTTP 500"]);
        assert_eq!(
            of.statuses,
            vec![Some(200), Some(200)],
            "a first dispatch's status rides on its completion"
        );
        // Every failed attempt is a row, even one whose event completed in the same batch.
        assert_eq!(of.attempts.event_ids, vec!["a", "b", "b"]);
        assert_eq!(of.attempts.answers, vec![Some("failed a"), Some("failed b"), Some("failed b")]);
        let mut done_first = Outcomes::on("slack");
        done_first.push(&done_a);
        done_first.push(&fail_a);
        assert_eq!((done_first.handled, done_first.failed), (vec!["a"], Vec::<&str>::new()));
    }

    fn text(statement: &Kept<'_>) -> String {
        let query = diesel::debug_query::<diesel::pg::Pg, _>(statement).to_string();
        query.split(" -- binds").next().unwrap_or_default().to_owned()
    }

    const SHARDS: Shards = Shards { receipts: 102008, payloads: 102016, requests: 102024, attempts: 102032 };

    fn batch_of(tenants: Vec<Option<Shards>>) -> NodeBatch<'static> {
        let mut by_tenant = BTreeMap::new();
        for shards in tenants {
            rows_of(&mut by_tenant, Uuid::new_v4()).shards = shards;
        }
        NodeBatch { tenants: String::new(), by_tenant: by_tenant.into_values().collect() }
    }

    #[test]
    fn a_batch_is_written_in_its_shards_tables_only_when_every_tenants_shards_are_known() {
        let known = batch_of(vec![Some(SHARDS), Some(Shards { receipts: 102009, ..SHARDS })]);
        assert_eq!(known.first_route(), Route::Shards);
        let mut held = known.held_shards();
        held.retain(|c| c != '{' && c != '}');
        let mut held: Vec<&str> = held.split(',').collect();
        held.sort_unstable();
        assert_eq!(
            held,
            vec!["102008", "102009", "102016", "102016", "102024", "102024", "102032", "102032"],
            "each tenant's shard of each table is held"
        );
        assert_eq!(batch_of(vec![Some(SHARDS), None]).first_route(), Route::Distributed);
        assert_eq!(known.groups(Route::Shards).len(), 2, "a statement per tenant in its shard's table");
        assert_eq!(
            known.groups(Route::Distributed).len(),
            1,
            "one statement for all through the distributed table"
        );
    }

    #[test]
    fn in_a_shards_table_the_outcomes_find_their_rows_by_the_whole_key_joined_with_the_arrays() {
        let done = outcome("a", true);
        let failed = outcome("b", false);
        let mut of = Outcomes::on("slack");
        of.push(&done);
        of.push(&failed);
        let mut by_tenant = BTreeMap::new();
        let tenant = rows_of(&mut by_tenant, *done.key.tenant.as_uuid());
        tenant.shards = Some(SHARDS);

        let completions = text(&tenant.completions_update(&of, Route::Shards));
        assert!(
            completions.starts_with("UPDATE public.messaging_event_receipts_102008 AS r SET handled_at"),
            "{completions}"
        );
        assert!(
            completions.contains(
                "AS u(tenant, platform, event_id, handled_at, dispatched_at, status) WHERE r.tenant_id = u.tenant \
                 AND r.platform = u.platform AND r.external_event_id = u.event_id AND r.handled_at IS NULL"
            ),
            "no constant a stale estimate could scan the tenant's receipts by: {completions}"
        );
        let release = text(&tenant.payloads_release(&of, Route::Shards));
        assert!(
            release.starts_with("DELETE FROM public.messaging_event_payloads_102016 AS p USING unnest("),
            "{release}"
        );
        let failures = text(&tenant.failures_update(&of, Route::Shards));
        assert!(failures.contains("r.external_event_id = u.event_id AND r.handled_at IS NULL"), "{failures}");
        let unlease = text(&tenant.payloads_unlease(&of, Route::Shards));
        assert!(
            unlease.starts_with(
                "UPDATE public.messaging_event_payloads_102016 AS p SET leased_until = NULL FROM"
            ),
            "{unlease}"
        );
        let attempts = text(&tenant.attempts_insert(&of, Route::Shards));
        assert!(
            attempts.starts_with("INSERT INTO public.messaging_event_attempts_102032 AS a"),
            "{attempts}"
        );

        // Through the distributed tables, the tenant is named, as Citus needs to route.
        let routed = text(&tenant.completions_update(&of, Route::Distributed));
        assert!(routed.starts_with("UPDATE public.messaging_event_receipts AS r SET"), "{routed}");
        assert!(routed.contains("WHERE r.tenant_id = $"), "{routed}");
        let routed_release = text(&tenant.payloads_release(&of, Route::Distributed));
        assert!(
            routed_release
                .starts_with("DELETE FROM public.messaging_event_payloads AS p WHERE p.tenant_id = $"),
            "{routed_release}"
        );
    }

    #[test]
    fn a_claims_statement_names_its_shards_table_or_the_distributed_one() {
        assert_eq!(
            text(&Kept(vec![Table::Receipts.named(Some(SHARDS))])),
            "public.messaging_event_receipts_102008"
        );
        assert_eq!(
            text(&Kept(vec![Table::Requests.named(Some(SHARDS))])),
            "public.messaging_request_replays_102024"
        );
        assert_eq!(text(&Kept(vec![Table::Receipts.named(None)])), "public.messaging_event_receipts");
    }
}

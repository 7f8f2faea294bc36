//! On Citus, a writer per node: each tenant's claims and outcomes go to the writer of the node
//! that holds its receipts (ADR 22), and that writer sends them to the node itself, over a pool
//! of its own (ADR 24): the node runs the statements on its shards locally, and the coordinator
//! is not on the hot path. On one PostgreSQL there is one writer, as before.
//!
//! Three things follow from writing per node. A batch never writes on two workers, so it never
//! commits in two phases: Citus answers a two-phase `COMMIT` once the coordinator has recorded
//! its decision, and a worker lost between its `PREPARE` and its `COMMIT PREPARED` keeps that
//! transaction's rows there, invisible and their keys locked, until Citus's recovery finishes
//! it (every `citus.recover_2pc_interval`, a minute by default): an acknowledged, dispatched
//! event whose receipt nobody can read, complete or find, and which later reads as stranded.
//! Committed in one phase, a worker lost under the `COMMIT` loses the connection (or, for a
//! batch a node forwarded to another, is reported: "could not commit transaction for shard …")
//! and the batch is settled by its claim ids like any commit whose answer was lost
//! ([`super::claims`]). A node that is down holds up only its own writer:
//! the other nodes' tenants' claims and completions never wait behind a batch that is waiting
//! for it. And a statement sent to the node that holds its shard is planned and run there
//! alone, with the plan the node keeps for it (`cycle::on_node`).
//!
//! Where a tenant's rows are is Citus's metadata, read on the coordinator (no worker is asked)
//! and trusted for [`TRUSTED_FOR`]: the node, and the tenant's shard of each table it is
//! written in there ([`Shards`]; a batch writes those tables directly, ADR 30). A tenant whose
//! node cannot be looked up in time goes to the shared writer, which writes through the
//! coordinator, as on one PostgreSQL. A batch sent to a node that no longer holds the tenant's
//! shard (moved by a rebalance in the meantime) is still right: the node refuses to hold the
//! shard, the batch is written through the distributed tables instead (the node forwards it to
//! the shard's new node, as the coordinator would), and its tenants are looked up again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use diesel::sql_types::{BigInt, Bool, Integer, Text, Uuid as SqlUuid};
use doorman_domain::{StorageError, TenantId};
use tokio::time::Instant;

use super::errors::from_diesel;
use super::group_commit::{GroupCommit, GroupSettings, Writer};
use super::pool::PgPool;

/// How long a tenant's node is trusted. After a rebalance moves a tenant's shard, its next
/// batch still goes to the old node's writer: the old node refuses to hold the shard, the batch
/// is written through the distributed tables (forwarded to the new node, in two phases:
/// correct, only without the guarantee above), and the tenant is looked up again (ADR 30).
const TRUSTED_FOR: Duration = Duration::from_secs(30);

/// How long a request waits for its tenant's node to be looked up before it goes to the
/// shared writer: the look-up must not eat the claim's share of Slack's 3 seconds.
const LOOK_UP_WITHIN: Duration = Duration::from_millis(250);

/// The coordinator's node group in `pg_dist_node`.
const COORDINATOR_GROUP: i32 = 0;

const UNKNOWN: u8 = 0;
const ONE_SERVER: u8 = 1;
const CITUS: u8 = 2;

/// A kind's writer, given the node it writes on directly (`None`: through the coordinator, or
/// on one PostgreSQL).
pub(super) type WriterOn<R, A> = Arc<dyn Fn(Option<NodeWrites>) -> Writer<R, A> + Send + Sync>;

/// What a node's writer writes with: a pool of connections to the node, and where on it each
/// tenant's rows are.
#[derive(Debug, Clone)]
pub(super) struct NodeWrites {
    pub(super) pool: PgPool,
    group: i32,
    placements: Arc<Placements>,
}

impl NodeWrites {
    /// `tenant`'s shards on this node, if it was placed here within [`TRUSTED_FOR`].
    pub(super) fn shards_of(&self, tenant: uuid::Uuid) -> Option<Shards> {
        let placed = self.placements.nodes.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (node, shards, looked_up) = placed.get(&TenantId::from_uuid(tenant))?;
        (node.group == self.group && looked_up.elapsed() < TRUSTED_FOR).then_some(*shards)
    }

    /// Forgets where `tenants` are: the node said it no longer holds their shards, and the next
    /// write for each looks it up again.
    pub(super) fn forget(&self, tenants: impl IntoIterator<Item = uuid::Uuid>) {
        let mut placed = self.placements.nodes.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        for tenant in tenants {
            placed.remove(&TenantId::from_uuid(tenant));
        }
    }
}

/// A kind of write (claims, or outcomes) with one writer per node on Citus.
pub(super) struct PlacedWriters<R, A> {
    name: &'static str,
    pool: PgPool,
    settings: GroupSettings,
    write_on: WriterOn<R, A>,
    /// The writer for one PostgreSQL, and on Citus for tenants whose node is not known.
    shared: GroupCommit<R, A>,
    nodes: RwLock<HashMap<Node, GroupCommit<R, A>>>,
    placements: Arc<Placements>,
}

impl<R: Send + 'static, A: Send + 'static> PlacedWriters<R, A> {
    /// Starts the shared writer; a node's is started when its first tenant writes.
    pub(super) fn start(
        name: &'static str,
        pool: PgPool,
        settings: GroupSettings,
        write_on: WriterOn<R, A>,
        placements: Arc<Placements>,
    ) -> Self {
        Self {
            name,
            shared: GroupCommit::start(name, settings, write_on(None)),
            pool,
            settings,
            write_on,
            nodes: RwLock::default(),
            placements,
        }
    }

    /// The writer through the coordinator (on one PostgreSQL, the only one).
    pub(super) fn through_the_coordinator(&self) -> GroupCommit<R, A> {
        self.shared.clone()
    }

    /// The writer `tenant`'s rows go to.
    pub(super) async fn writer_for(&self, tenant: TenantId) -> GroupCommit<R, A> {
        let Some(node) = self.placements.node_of(&self.pool, tenant).await else {
            return self.shared.clone();
        };
        if let Some(writer) = self.nodes.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&node) {
            return writer.clone();
        }
        let mut nodes = self.nodes.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        nodes
            .entry(node.clone())
            .or_insert_with(|| {
                // Group 0 is the coordinator (holding shards on a small cluster): reached as
                // `DATABASE_URL` says, not by the name its metadata gives it.
                let direct = match (node.group, u16::try_from(node.port)) {
                    (COORDINATOR_GROUP, _) => self.pool.on_node(None),
                    (_, Ok(port)) => self.pool.on_node(Some((&node.host, port))),
                    (_, Err(_)) => None,
                }
                .map(|pool| NodeWrites {
                    pool,
                    group: node.group,
                    placements: Arc::clone(&self.placements),
                });
                tracing::info!(
                    writer = self.name,
                    node.group = node.group,
                    node.address = %format_args!("{}:{}", node.host, node.port),
                    direct = direct.is_some(),
                    "a writer of its own for a Citus node"
                );
                GroupCommit::start(self.name, self.settings, (self.write_on)(direct))
            })
            .clone()
    }
}

/// A Citus node: its group (what placements name) and where it is reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Node {
    group: i32,
    host: String,
    port: i32,
}

/// A tenant's shard of each table a node batch writes (co-located: they move together), by
/// shard id; the shard's table on its node is the table's name, `_`, and the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shards {
    pub(super) receipts: i64,
    pub(super) payloads: i64,
    pub(super) requests: i64,
    pub(super) attempts: i64,
}

/// Which node holds each tenant's receipts, and its shards there, learnt from the database;
/// shared by a store's writers.
#[derive(Debug, Default)]
pub(super) struct Placements {
    layout: AtomicU8,
    nodes: RwLock<HashMap<TenantId, (Node, Shards, Instant)>>,
}

impl Placements {
    /// The node holding `tenant`'s shards on Citus; `None` on one PostgreSQL, or when it could
    /// not be looked up in time.
    async fn node_of(&self, pool: &PgPool, tenant: TenantId) -> Option<Node> {
        let layout = match self.layout.load(Ordering::Acquire) {
            UNKNOWN => match tokio::time::timeout(LOOK_UP_WITHIN, is_citus(pool)).await {
                Ok(Ok(citus)) => {
                    let layout = if citus { CITUS } else { ONE_SERVER };
                    self.layout.store(layout, Ordering::Release);
                    layout
                }
                Ok(Err(error)) => {
                    tracing::debug!(error = %error, "could not ask whether the database is Citus");
                    return None;
                }
                Err(_) => {
                    tracing::debug!(
                        "asking whether the database is Citus took too long; this write goes to the shared writer"
                    );
                    return None;
                }
            },
            known => known,
        };
        if layout != CITUS {
            return None;
        }
        let now = Instant::now();
        if let Some((node, _, looked_up)) =
            self.nodes.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&tenant)
            && now.duration_since(*looked_up) < TRUSTED_FOR
        {
            return Some(node.clone());
        }
        match tokio::time::timeout(LOOK_UP_WITHIN, look_up(pool, tenant)).await {
            Ok(Ok(placed)) => {
                let (node, shards) = placed.parts();
                self.nodes
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(tenant, (node.clone(), shards, now));
                Some(node)
            }
            Ok(Err(error)) => {
                tracing::warn!(tenant.id = %tenant, error = %error, "could not look up which Citus node holds a tenant; its write goes to the shared writer");
                None
            }
            Err(_) => {
                tracing::warn!(tenant.id = %tenant, "looking up which Citus node holds a tenant took too long; its write goes to the shared writer");
                None
            }
        }
    }
}

async fn is_citus(pool: &PgPool) -> Result<bool, StorageError> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = Bool)]
        citus: bool,
    }
    let mut unit = pool.unit().await?;
    let query =
        diesel::sql_query("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus");
    let found = diesel_async::RunQueryDsl::get_result::<Found>(query, &mut unit).await.map_err(from_diesel);
    unit.finish(found).await.map(|found| found.citus)
}

/// A tenant's placement as [`look_up`] reads it.
#[derive(diesel::QueryableByName)]
struct Placed {
    #[diesel(sql_type = Integer)]
    node_group: i32,
    #[diesel(sql_type = Text)]
    host: String,
    #[diesel(sql_type = Integer)]
    port: i32,
    #[diesel(sql_type = BigInt)]
    receipts: i64,
    #[diesel(sql_type = BigInt)]
    payloads: i64,
    #[diesel(sql_type = BigInt)]
    requests: i64,
    #[diesel(sql_type = BigInt)]
    attempts: i64,
}

impl Placed {
    fn parts(self) -> (Node, Shards) {
        let Self { node_group, host, port, receipts, payloads, requests, attempts } = self;
        (Node { group: node_group, host, port }, Shards { receipts, payloads, requests, attempts })
    }
}

/// The node holding `tenant`'s shard of the receipts (its payloads, request fingerprints and
/// attempts are co-located with it): its group, its primary's address, and the tenant's shard
/// of each of those tables.
async fn look_up(pool: &PgPool, tenant: TenantId) -> Result<Placed, StorageError> {
    let mut unit = pool.unit().await?;
    let query = diesel::sql_query(
        "SELECT p.groupid AS node_group, n.nodename AS host, n.nodeport AS port, s.receipts, \
                get_shard_id_for_distribution_column('public.messaging_event_payloads', $1::uuid) AS payloads, \
                get_shard_id_for_distribution_column('public.messaging_request_replays', $1::uuid) AS requests, \
                get_shard_id_for_distribution_column('public.messaging_event_attempts', $1::uuid) AS attempts \
           FROM (SELECT get_shard_id_for_distribution_column('public.messaging_event_receipts', $1::uuid) AS receipts) AS s \
           JOIN pg_dist_placement AS p ON p.shardid = s.receipts \
           JOIN pg_dist_node AS n ON n.groupid = p.groupid AND n.noderole = 'primary' AND n.isactive",
    )
    .bind::<SqlUuid, _>(*tenant.as_uuid());
    let found = diesel_async::RunQueryDsl::get_result::<Placed>(query, &mut unit).await.map_err(from_diesel);
    unit.finish(found).await
}

//! The operator actions' ports, one per concern: tenants, workspace links, agents, install
//! links and installations, the event ledger, the audit trail, admin keys, and where agents
//! may be. The operator use cases (`usecases::operator`) reach them through
//! [`OperatorPorts`], which the app fixes once for each face's database role.
//!
//! Every method that changes something takes the [`AuditEntry`] describing the change and
//! MUST write it in the same transaction as the change, and not at all when nothing changed:
//! so the audit trail can neither miss a change nor record one that did not happen.

use std::future::Future;

use chrono::{DateTime, Utc};

use super::Clock;
use crate::errors::StorageError;
use crate::model::{
    ActivityHour, AgentSecret, AgentSummary, AgentUrl, AttemptRecord, AuditCursor, AuditEntry, AuditFilter,
    AuditRecord, Created, EventCursor, EventFilter, ExternalEventId, FailingTenant, FoundReceipt,
    Idempotency, InstallationSummary, JobCursor, KeptPayload, KeyId, KeyName, KeyScope, KeySecret,
    KeySummary, Linked, LinkedWorkspace, NewReplayJob, NewTenant, Page, PageRequest, Platform, ReceiptKey,
    ReceiptRecord, RedeliverySchedule, Removed, ReplayAttempt, ReplayJob, ReplayJobId, ReplayOutcome,
    ReplayResult, StrandedTenant, TenantCursor, TenantId, TenantName, TenantRecord, TenantSearch,
    TroubledAgent, WorkspaceRef,
};

/// Tenants.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Tenants: Send + Sync {
    /// Creates `tenant`, with `audit`.
    ///
    /// With `idempotency`, MUST create at most one tenant per scope and key, also for
    /// concurrent calls: a later call with the same fingerprint MUST return
    /// `Created::Repeated` with the tenant the first call created, and one with another
    /// fingerprint `Created::KeyReused`; a call while another under the same key is still
    /// being processed MUST return `Created::InProgress` without waiting for it. None of these
    /// writes anything.
    fn create(
        &self,
        tenant: &NewTenant,
        idempotency: Option<Idempotency>,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<Created, StorageError>> + Send;

    /// The tenant, or `None` when there is none with that id.
    fn get(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<Option<TenantRecord>, StorageError>> + Send;

    /// Tenants, oldest first; with `only`, that tenant alone (if it exists); only those every
    /// one of `search` finds (MUST match their text as text: `%` and `_` are not wildcards;
    /// an id prefix ignores case, a workspace id does not).
    fn list(
        &self,
        only: Option<TenantId>,
        search: Vec<TenantSearch>,
        page: &PageRequest<TenantCursor>,
    ) -> impl Future<Output = Result<Page<TenantRecord, TenantCursor>, StorageError>> + Send;

    /// How many tenants `list` finds with `only` and `search` (every page of it), counting at
    /// most `up_to`: MUST answer `up_to` when there are more, reading no more than `up_to` rows.
    fn count(
        &self,
        only: Option<TenantId>,
        search: Vec<TenantSearch>,
        up_to: u64,
    ) -> impl Future<Output = Result<u64, StorageError>> + Send;

    /// Whether the tenant keeps its claimed events' payloads for replay, with `audit`.
    fn set_retain_payloads(
        &self,
        tenant: TenantId,
        on: bool,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Whether the tenant lets its read-only portal keys made with `read_payloads` read its
    /// kept payloads, with `audit`. MUST change nothing else of the tenant, and every reading
    /// of the tenant (`get`, `list`) MUST answer the setting as it is from the commit on: it is
    /// what decides, at each request, whether such a key is shown a payload, so it MUST NOT
    /// be answered from a copy kept longer.
    fn set_read_only_portals_read_payloads(
        &self,
        tenant: TenantId,
        on: bool,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Turns redelivery on with `schedule`, or off with `None`, with `audit`.
    ///
    /// MUST store the schedule's delays exactly, in order, so that the runner and every listing
    /// read back the schedule set (`None` reads back as off); MUST NOT change whether the tenant
    /// retains payloads (a tenant with redelivery keeps them whatever that setting says, and
    /// after redelivery is off keeps them only if it says so).
    fn set_redelivery(
        &self,
        tenant: TenantId,
        schedule: Option<RedeliverySchedule>,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Renames the tenant, with `audit`.
    fn rename(
        &self,
        tenant: TenantId,
        name: &TenantName,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Deletes the tenant and everything of its directory (workspace links, installations
    /// and their tokens, agent, install links, scoped keys), its kept payloads and request
    /// fingerprints, with `audit`, in one transaction; the audit trail keeps its entries.
    /// MUST remember the tenant as deleted in that transaction (so what it leaves in the
    /// receipts is found again), and return `false`, writing nothing, when there is no such
    /// tenant. Every serving process MUST forget it within 200 ms of the commit.
    fn delete(
        &self,
        tenant: TenantId,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<bool, StorageError>> + Send;

    /// Whether a tenant with this id was deleted (its audit entries are still there to read).
    fn was_deleted(&self, tenant: TenantId) -> impl Future<Output = Result<bool, StorageError>> + Send;

    /// Deletes at most `batch` receipts of a deleted tenant (and any payload or fingerprint
    /// it still has); returns how many receipts went. MUST NOT touch another tenant's rows.
    fn purge_receipts(
        &self,
        tenant: TenantId,
        batch: u32,
    ) -> impl Future<Output = Result<u64, StorageError>> + Send;
}

/// Which workspaces a tenant's deliveries come from.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Workspaces: Send + Sync {
    /// The tenant's links, oldest first.
    fn list(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<Vec<LinkedWorkspace>, StorageError>> + Send;

    /// Links `workspace` to `tenant`, with `audit`.
    ///
    /// - MUST answer `Linked::Taken`, changing nothing, when another tenant has the workspace
    ///   (a workspace belongs to one tenant, whichever process or role asks).
    /// - MUST answer `Linked::Already`, changing nothing, when `tenant` has it.
    fn link(
        &self,
        tenant: TenantId,
        platform: Platform,
        workspace: &WorkspaceRef,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<Linked, StorageError>> + Send;

    /// Removes `tenant`'s link of `workspace` and its installation there, if any, with
    /// `audit` when anything was removed. MUST NOT touch another tenant's rows.
    fn remove(
        &self,
        tenant: TenantId,
        platform: Platform,
        workspace: &WorkspaceRef,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<Removed, StorageError>> + Send;
}

/// Tenants' agents.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Agents: Send + Sync {
    /// Across tenants: the agents failing now (a serving process opened their circuit and has
    /// not seen them answer since) or disabled, the longest failing first, at most `limit`.
    fn troubled(&self, limit: u32) -> impl Future<Output = Result<Vec<TroubledAgent>, StorageError>> + Send;

    /// The tenant's agent (never its secret), or `None` when none is set.
    fn get(
        &self,
        tenant: TenantId,
    ) -> impl Future<Output = Result<Option<AgentSummary>, StorageError>> + Send;

    /// Sets (or replaces) the agent, with `audit`. The secret MUST be stored sealed; a paused
    /// agent stays paused.
    fn set(
        &self,
        tenant: TenantId,
        url: &AgentUrl,
        secret: &AgentSecret,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Pauses or resumes the agent, with `audit`. MUST return `false`, changing and
    /// auditing nothing, when the tenant has no agent. Every serving process MUST see the
    /// change within 200 ms of the commit (the directory's notices).
    fn set_paused(
        &self,
        tenant: TenantId,
        paused: bool,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<bool, StorageError>> + Send;

    /// Removes the agent (and its sealed secret), with `audit`. MUST return `false`,
    /// changing and auditing nothing, when the tenant has none. Every serving process MUST
    /// see the change within 200 ms of the commit.
    fn remove(
        &self,
        tenant: TenantId,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<bool, StorageError>> + Send;
}

/// Install links and the installations they lead to.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait InstallRecords: Send + Sync {
    /// A new install link for `tenant`, usable until `expires_at`, with `audit`: the token to
    /// put in its URL. MUST store only a hash of it.
    fn create_link(
        &self,
        tenant: TenantId,
        expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<String, StorageError>> + Send;

    /// Installations of `tenant` (every tenant's with `None`), oldest first, at most
    /// 1,000: MUST NOT carry a token.
    fn list(
        &self,
        tenant: Option<TenantId>,
    ) -> impl Future<Output = Result<Vec<InstallationSummary>, StorageError>> + Send;
}

/// What became of events: receipts, read per tenant.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Ledger: Send + Sync {
    /// One receipt and whether its payload is kept; `None` when there is no such receipt.
    fn receipt(
        &self,
        key: &ReceiptKey,
    ) -> impl Future<Output = Result<Option<ReceiptRecord>, StorageError>> + Send;

    /// The tenant's (every tenant's with `None`) failed (newest failure first) or stranded
    /// (oldest claim first) receipts. With a tenant, MUST NOT return another tenant's.
    fn list(
        &self,
        tenant: Option<TenantId>,
        filter: &EventFilter,
        page: &PageRequest<EventCursor>,
    ) -> impl Future<Output = Result<Page<ReceiptRecord, EventCursor>, StorageError>> + Send;

    /// Every receipt of `platform` numbered `event_id` among the tenant's (every tenant's with
    /// `None`), each with its tenant's name, ordered by tenant name then id. With a tenant,
    /// MUST NOT return another tenant's. MUST NOT scan the receipts: at most one probe of
    /// their primary key per tenant (support searches beside the hot path, and the receipts
    /// have no index on the event id alone).
    fn find(
        &self,
        tenant: Option<TenantId>,
        platform: Platform,
        event_id: &ExternalEventId,
    ) -> impl Future<Output = Result<Vec<FoundReceipt>, StorageError>> + Send;
    /// How many receipts `list` selects with `filter` (every page of it), counting at most
    /// `up_to`: MUST answer `up_to` when there are more, and MUST NOT read more than `up_to`
    /// rows to know it (a listing's total must stay cheap at a million receipts).
    fn count(
        &self,
        tenant: Option<TenantId>,
        filter: &EventFilter,
        up_to: u64,
    ) -> impl Future<Output = Result<u64, StorageError>> + Send;

    /// The tenant's hours of activity (its dispatches as the serving processes counted them)
    /// from the hour `since` is in, oldest first; hours without any are absent. MUST read the
    /// tenant's own only.
    fn activity(
        &self,
        tenant: TenantId,
        since: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<ActivityHour>, StorageError>> + Send;

    /// Across tenants: those with failed dispatches from the hour `since` is in, the most
    /// failures first, at most `limit`, each with its name. MUST NOT read receipts (the
    /// overview is read on every view of it, at any volume).
    fn failing_most(
        &self,
        since: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<FailingTenant>, StorageError>> + Send;

    /// Across tenants: those with stranded receipts now, the most first (ties in tenant id
    /// order), at most `limit`, each with its name and how many. A receipt counts when the
    /// serving processes' sweep has marked it (`swept_at`) and it is stranded at `before`
    /// (claimed before it, never handled, no failure recorded): what the
    /// `doorman_receipts_stranded` gauge counts, per tenant. One stranded since the last sweep
    /// counts from the next (the tenant's stranded listing already shows it). MUST NOT change
    /// any row (a read never sweeps); MUST read only the receipts the sweep marked (their
    /// partial index), never every receipt (the overview is read on every view of it, at any
    /// volume); MUST leave out a tenant with none (a failed receipt is not stranded).
    fn stranded_most(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<StrandedTenant>, StorageError>> + Send;

    /// The attempts on record of one event (every failed dispatch and every replay), oldest
    /// first. MUST read them in the event's tenant scope: never another tenant's.
    fn attempts(
        &self,
        key: &ReceiptKey,
    ) -> impl Future<Output = Result<Vec<AttemptRecord>, StorageError>> + Send;

    /// The event's kept payload, opened: the JSON text the platform sent, `None` when none is
    /// kept. MUST read it in the event's tenant scope (never another tenant's), MUST redact
    /// the platform's own secrets in it (Slack's verification `token`), and MUST NOT log it. A
    /// kept payload that does not open is an error, never `None` (it is kept: the caller is
    /// told something is wrong, not that there is nothing).
    fn payload(
        &self,
        key: &ReceiptKey,
    ) -> impl Future<Output = Result<Option<KeptPayload>, StorageError>> + Send;
}

/// The audit trail.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait AuditTrail: Send + Sync {
    /// Writes one entry on its own, for a change no other port makes (a replay).
    fn record(&self, entry: &AuditEntry) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Entries, newest first; with `tenant`, that tenant's only; only those `filter` selects
    /// (its action's stored word; made with its key; at or after `since`, before `until`).
    fn list(
        &self,
        tenant: Option<TenantId>,
        filter: &AuditFilter,
        page: &PageRequest<AuditCursor>,
    ) -> impl Future<Output = Result<Page<AuditRecord, AuditCursor>, StorageError>> + Send;
}

/// Replay jobs: what an operator asked to send again, and each event's outcome as it comes.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait ReplayJobs: Send + Sync {
    /// Writes the job (queued), its events in order and `audit`, in one transaction.
    fn create(
        &self,
        job: &NewReplayJob,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// The job with its events, or `None` when the tenant has no such job.
    fn get(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> impl Future<Output = Result<Option<ReplayJob>, StorageError>> + Send;

    /// The tenant's jobs, newest first, without their events.
    fn list(
        &self,
        tenant: TenantId,
        page: &PageRequest<JobCursor>,
    ) -> impl Future<Output = Result<Page<ReplayJob, JobCursor>, StorageError>> + Send;

    /// Takes an unfinished job no process holds (queued, or whose holder stopped renewing
    /// its hold), oldest first, and holds it until `until`. MUST give one job to one caller
    /// at a time, whichever process asks; `None` when there is none.
    fn take(
        &self,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<(TenantId, ReplayJobId)>, StorageError>> + Send;

    /// Holds the job a while longer (its holder is still working on it).
    fn hold(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        until: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// The job's events that have no outcome yet, in order, with their positions.
    fn pending(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> impl Future<Output = Result<Vec<(u32, ExternalEventId)>, StorageError>> + Send;

    /// Records one event's outcome with `audit`, in one transaction.
    fn record(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        position: u32,
        result: &ReplayResult,
        detail: &str,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Records every event of the job that has no outcome yet as `outcome`, ended now and
    /// never started (no attempt), with `audit`, and marks the job finished, in one transaction.
    fn refuse_pending(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        outcome: &ReplayOutcome,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Marks the job finished.
    fn finish(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Every replay of one event, in any job, oldest first.
    fn attempts(
        &self,
        key: &ReceiptKey,
    ) -> impl Future<Output = Result<Vec<ReplayAttempt>, StorageError>> + Send;
}

/// Admin API keys.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait AdminKeys: Send + Sync {
    /// Creates a key, with `audit`: its secret text, to be shown once. MUST store only a hash
    /// of the secret. From `expires_at` on (if any) it MUST authenticate nothing.
    fn create(
        &self,
        id: KeyId,
        name: &KeyName,
        scope: KeyScope,
        expires_at: Option<DateTime<Utc>>,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<KeySecret, StorageError>> + Send;

    /// Every key, oldest first: never its secret or hash.
    fn list(&self) -> impl Future<Output = Result<Vec<KeySummary>, StorageError>> + Send;

    /// One key (revoked or expired ones too), or `None` when there is no such key: never its
    /// secret or hash.
    fn get(&self, id: KeyId) -> impl Future<Output = Result<Option<KeySummary>, StorageError>> + Send;

    /// Revokes a key, with `audit`: from the next request on, in every process, it
    /// authenticates nothing. MUST return `false`, writing nothing, when there is no such
    /// key or it was already revoked.
    fn revoke(
        &self,
        id: KeyId,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<bool, StorageError>> + Send;

    /// Makes a one-time console sign-in link for key `id`, with `audit`: its token, to be
    /// shown once. MUST store only a hash of the token; the token MUST sign in at most once,
    /// and not from `expires_at` on. MUST return `None`, writing nothing, when there is no
    /// such key or it is revoked.
    fn sign_in_link(
        &self,
        id: KeyId,
        expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> impl Future<Output = Result<Option<KeySecret>, StorageError>> + Send;
}

/// Where agents may be reached: the rule the bridge applies before every dispatch, asked
/// before an agent is stored.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Destinations: Send + Sync {
    /// `Err(why)` when dispatches to `url` would be refused (its scheme, or the addresses its
    /// host resolves to).
    fn check(&self, url: &AgentUrl) -> impl Future<Output = Result<(), String>> + Send;
}

/// The ports the operator use cases reach, fixed together once by the app for each face.
pub trait OperatorPorts: Send + Sync {
    type Tenants: Tenants;
    type Workspaces: Workspaces;
    type Agents: Agents;
    type Installs: InstallRecords;
    type Ledger: Ledger;
    type Audit: AuditTrail;
    type Keys: AdminKeys;
    type Jobs: ReplayJobs;
    type Destinations: Destinations;
    type Clock: Clock;

    fn tenants(&self) -> &Self::Tenants;
    fn workspaces(&self) -> &Self::Workspaces;
    fn agents(&self) -> &Self::Agents;
    fn installs(&self) -> &Self::Installs;
    fn ledger(&self) -> &Self::Ledger;
    fn audit(&self) -> &Self::Audit;
    fn keys(&self) -> &Self::Keys;
    fn jobs(&self) -> &Self::Jobs;
    fn destinations(&self) -> &Self::Destinations;
    fn clock(&self) -> &Self::Clock;
}

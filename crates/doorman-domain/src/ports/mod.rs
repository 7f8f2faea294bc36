//! The ports: what the use cases need from the outside world.
//!
//! Each method returns `impl Future + Send` so the app can run the use cases on a
//! multi-threaded runtime and in spawned tasks. Each doc comment states the contract an
//! adapter MUST honour; the use cases rely on exactly these words.
//!
//! With the `mocks` feature (and in this crate's tests) mockall generates a `Mock…` of each
//! (`MockTenantDirectory`, `MockAgentBridge`, `MockReceiptStore`, `MockClock`, …).
//!
//! The inbound path's ports are here; the operator actions' ports, split by concern, are in
//! [`operator`].

pub mod operator;

pub use operator::*;

use std::future::Future;

use chrono::{DateTime, Utc};

use crate::errors::{DispatchError, OAuthError, RefreshError, StorageError};
use crate::model::{
    AttemptRecord, Busy, Claim, Completion, Delivered, Fingerprint, Grant, Installation, Job, Lifecycle,
    LinkState, NewReceipt, OpenedState, OperationalEvent, Permit, Platform, ReceiptKey, ReceiptRecord,
    Recorded, Redelivery, RedeliverySchedule, ReplaySelection, ReplayTake, ScheduledTenant, TakenState,
    Tenant, TenantId, WorkspaceRef,
};

/// Finds the tenant a workspace belongs to.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait TenantDirectory: Send + Sync {
    /// Resolves a workspace to its tenant and that tenant's agent settings.
    ///
    /// - MUST return `Ok(None)` for a workspace no tenant has linked: that is a normal
    ///   answer (an app installed somewhere it was not set up), not an error.
    /// - MUST apply decision 20's rule, as [`crate::WorkspaceRef`] states it: what the
    ///   delivery says of its installation decides whether the enterprise's org-wide link or
    ///   the team's link is tried first (an org-wide one tries no team link).
    /// - MUST return `Err(StorageError::Unavailable)` when the store cannot be reached, so
    ///   the caller answers 503 and nothing is written.
    fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> impl Future<Output = Result<Option<Tenant>, StorageError>> + Send;
}

/// Why the bridge cannot take a job for a tenant right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unready {
    /// The circuit is open after repeated failures; it closes again after a cooldown.
    CircuitOpen,
    /// One more job would exceed the tenant's or the process's bound on work in flight.
    Busy(Busy),
}

/// Hands events to tenants' agents.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait AgentBridge: Send + Sync {
    /// Takes a place for one more job of `tenant`. Cheap and local: it runs before the HTTP
    /// answer, on every delivery, and before anything is claimed.
    ///
    /// - MUST return `Err(Unready::CircuitOpen)` while the tenant's circuit is open (and,
    ///   once its cooldown has ended, to every caller but the one probe let through), and
    ///   `Err(Unready::Busy(_))` when one more job would exceed the tenant's or the process's
    ///   bound on work in flight; either way reserving nothing.
    /// - The permit MUST give its place back when dropped (the job holds it until its
    ///   dispatch has ended).
    fn admit(&self, tenant: TenantId) -> Result<Permit, Unready>;

    /// Delivers one job to the tenant's agent and waits for its answer.
    ///
    /// - MUST return `Ok(status)` (the agent's 2xx status) only when the agent acknowledged
    ///   the job.
    /// - MUST return `DispatchError::Rejected` with the first KiB of the agent's answer body
    ///   (as [`crate::answer_excerpt`] makes it) when the agent answered another status, and
    ///   `DispatchError::Unreachable` with what kept the connection from being made.
    /// - MAY retry internally, but only while the request provably never reached the agent;
    ///   once it may have, a failure is returned, never a second send.
    /// - MUST return within the configured dispatch timeout (`DispatchError::TimedOut`).
    ///
    /// With `installation` (and a bot token in it), the dispatch carries the agent's
    /// authorization to answer in the workspace.
    fn dispatch(
        &self,
        job: &Job,
        installation: Option<Installation>,
    ) -> impl Future<Output = Result<u16, DispatchError>> + Send;
}

/// The durable record of which numbered events have been claimed.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait ReceiptStore: Send + Sync {
    /// Claims an event for this delivery.
    ///
    /// - MUST be atomic against concurrent claims of the same key, across requests and
    ///   processes: of any number of concurrent claims exactly one gets `Claim::Claimed`.
    /// - MUST have committed the claim when it returns `Claim::Claimed` (decision 2): a
    ///   concurrent claim is refused at once instead of waiting on an open transaction.
    /// - MUST return `Claim::Duplicate` when a receipt with the key exists, whatever its
    ///   state (handled, failed or still in flight), made by another claim.
    /// - MUST store `receipt.claim` with the receipt, and answer `Claim::Claimed` when the
    ///   receipt exists and holds that very claim: sending a claim again is harmless, which is
    ///   what makes a claim whose commit was not confirmed recoverable.
    /// - MUST answer [`StorageError::Unconfirmed`] when the claim was sent but its commit was
    ///   not confirmed in time (the connection died under it, or the store took too long): it
    ///   may have been made, and [`ReceiptStore::settle`] finds out. With any other error,
    ///   nothing was written.
    /// - MUST keep `receipt.retained` (sealed) in the same commit as a `Claimed` claim, and
    ///   nothing for a duplicate.
    fn claim(&self, receipt: &NewReceipt) -> impl Future<Output = Result<Claim, StorageError>> + Send;

    /// Settles a claim that was [unconfirmed](StorageError::Unconfirmed): claims the event now
    /// if nothing holds it, and answers `Claim::Claimed` when `receipt.claim` holds it (made
    /// now or by the unconfirmed attempt), `Claim::Duplicate` when another claim does.
    ///
    /// - The same atomicity as [`ReceiptStore::claim`]; the answer is final.
    /// - MUST wait for the store while it cannot answer (it runs after the acknowledgement,
    ///   with no deadline but its own), and return an error only once it gives up.
    fn settle(&self, receipt: &NewReceipt) -> impl Future<Output = Result<Claim, StorageError>> + Send;

    /// Records an unnumbered request's fingerprint (its signature) for `tenant` until it
    /// expires, so a second arrival of the same signed request is known for a replay.
    ///
    /// - The same guarantees as [`ReceiptStore::claim`]: atomic against concurrent records of
    ///   the same fingerprint, committed when it returns `Claim::Claimed`, `Claim::Duplicate`
    ///   when the fingerprint is already recorded and unexpired, nothing written on error.
    fn claim_request(
        &self,
        tenant: TenantId,
        fingerprint: &Fingerprint,
    ) -> impl Future<Output = Result<Claim, StorageError>> + Send;

    /// Marks a claimed receipt handled at `delivered.ended_at` and, in the same transaction,
    /// deletes at most `prune_batch` receipts of the same tenant claimed before
    /// `expired_before`, with their attempts.
    ///
    /// - MUST NOT touch another tenant's receipts.
    /// - MUST leave `handled_at` unchanged if it was already set (completion is idempotent).
    /// - MUST delete the receipt's kept payload, if any, in the same transaction.
    /// - MUST keep the first dispatch's start and status with the receipt, in the statement
    ///   that marks it handled (no statement more than a completion without them); a replay's
    ///   (`delivered.replay`) is kept as an attempt of its own instead, the receipt's first
    ///   dispatch left as it was.
    fn complete(
        &self,
        key: &ReceiptKey,
        delivered: &Delivered,
        expired_before: DateTime<Utc>,
        prune_batch: u32,
    ) -> impl Future<Output = Result<Completion, StorageError>> + Send;

    /// Records that a dispatch of a claimed event failed (`attempt.failure` is set): the
    /// attempt as a row of its own, and its reason and end as the receipt's failure.
    /// `handled_at` stays null: the receipt is listed as failed, and a retry of the event is
    /// still a duplicate. A kept payload stays (for a later replay), released from any
    /// replay's hold.
    ///
    /// - MUST be idempotent: the same attempt recorded twice is one attempt (an outcome whose
    ///   write was not confirmed is sent again).
    /// - MUST keep the attempt in the receipt's tenant scope, and delete it when the receipt's
    ///   retention ends.
    fn record_failure(
        &self,
        key: &ReceiptKey,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
}

/// The events retaining tenants kept, as a replay finds them.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait StoredEvents: Send + Sync {
    /// The tenant's receipts that `selection` names (handled ones included only when named
    /// by their event id), oldest claim first.
    ///
    /// - MUST NOT return another tenant's receipts.
    fn select(
        &self,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> impl Future<Output = Result<Vec<ReceiptRecord>, StorageError>> + Send;

    /// Takes the kept event of `key` for one replay, holding it until `hold_until`.
    ///
    /// - MUST answer `Handled`, `NoPayload`, `InProgress` (another replay's hold has not
    ///   expired) or `Unknown` without changing anything.
    /// - Otherwise MUST, atomically with taking the hold, count the replay on the receipt,
    ///   and return the event as received with `delivery.replay` set. The hold ends when the
    ///   replay's outcome is recorded ([`ReceiptStore`]), at `hold_until`, or on `release`.
    fn take(
        &self,
        key: &ReceiptKey,
        hold_until: DateTime<Utc>,
    ) -> impl Future<Output = Result<ReplayTake, StorageError>> + Send;

    /// Ends a hold whose replay sent nothing: MUST release it and take back the replay that
    /// `take` counted.
    fn release(&self, key: &ReceiptKey) -> impl Future<Output = Result<(), StorageError>> + Send;
}

/// The events of tenants with redelivery on, as the redelivery runner takes them (ADR 26).
///
/// An event is *due* a redelivery when its receipt is not handled and not given up, its
/// payload is kept and not held (by a redelivery or an operator's replay; an expired hold is
/// no hold), it has had fewer redeliveries than the schedule has delays, and the delay before
/// its next one has passed since its last attempt ended: its recorded failure's time or, for
/// an event no attempt finished, its claim plus `unfinished_after`. Its schedule is *spent*
/// when it is neither handled nor given up, has had as many redeliveries as the schedule has
/// delays, and is not held.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Redeliveries: Send + Sync {
    /// The tenants with redelivery on whose agent is set and not paused (a paused tenant's
    /// redeliveries wait for the resume).
    fn scheduled(&self) -> impl Future<Output = Result<Vec<ScheduledTenant>, StorageError>> + Send;

    /// Takes at most `limit` of `tenant`'s events due a redelivery, oldest claim first.
    ///
    /// - MUST, atomically with the take, hold each event until `hold_until` (as an operator's
    ///   replay holds it, so neither sends it while the other does) and count the redelivery
    ///   on its receipt; the count is spent even if the sender dies.
    /// - MUST NOT give one event to two concurrent takers, in this process or another.
    /// - MUST return each event as it was received, `delivery.redelivery` its new count.
    /// - MUST NOT return another tenant's events.
    fn take_due(
        &self,
        tenant: TenantId,
        schedule: &RedeliverySchedule,
        limit: u32,
        unfinished_after: std::time::Duration,
        hold_until: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<Redelivery>, StorageError>> + Send;

    /// Gives back a taken event that was not sent (its workspace moved, its agent was paused
    /// meanwhile): MUST end its hold and take back the redelivery counted.
    fn put_back(&self, key: &ReceiptKey) -> impl Future<Output = Result<(), StorageError>> + Send;

    /// Gives up on at most `limit` of `tenant`'s events whose schedule is spent, and returns
    /// them.
    ///
    /// - MUST mark each given up once (a second call does not return it again); it then
    ///   reads as failed with its last attempt's reason (or stranded, if none finished).
    /// - MUST release each one's kept payload unless `keep_payloads`.
    fn give_up(
        &self,
        tenant: TenantId,
        schedule: &RedeliverySchedule,
        limit: u32,
        keep_payloads: bool,
    ) -> impl Future<Output = Result<Vec<ReceiptKey>, StorageError>> + Send;
}

/// Where operational events wait to be sent to the deployment's operational webhook.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait OperationalOutbox: Send + Sync {
    /// Records `events` to be sent, each once (retried until its receiver takes it or its
    /// schedule is spent).
    ///
    /// - MUST have made them durable when it returns `Ok`: a process killed afterwards loses
    ///   none.
    fn record(&self, events: &[OperationalEvent]) -> impl Future<Output = Result<(), StorageError>> + Send;
}

/// The app's installations, after an event's answer (never on the acknowledgement path).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Installations: Send + Sync {
    /// Refreshes a rotating installation's bot token and returns the installation with it.
    ///
    /// - MUST refresh at most once for concurrent callers, across processes: a caller that
    ///   finds the token already refreshed by another returns that one without asking Slack.
    /// - MUST NOT hold a row lock or a pooled connection while Slack answers: concurrent
    ///   callers wait for the one asking (a lease), not on a lock.
    /// - MUST return `RefreshError::Slack` when Slack does not refresh it,
    ///   `RefreshError::NotConfigured` when no Slack app is configured, and
    ///   `RefreshError::Storage` when the installation cannot be read, leased or written (the
    ///   dispatch is then recorded as failed: `token_refresh_failed` for the first two,
    ///   `token_storage_failed` for the last).
    fn refresh(
        &self,
        tenant: TenantId,
        installation: &Installation,
    ) -> impl Future<Output = Result<Installation, RefreshError>> + Send;

    /// Applies a lifecycle event of the app in `workspace`: `Uninstalled` removes the tenant's
    /// installation there and the workspace's link; `TokensRevoked` forgets the revoked bot
    /// tokens. MUST touch only `tenant`'s rows.
    fn apply(
        &self,
        tenant: TenantId,
        workspace: &WorkspaceRef,
        lifecycle: &Lifecycle,
    ) -> impl Future<Output = Result<(), StorageError>> + Send;
}

/// Install links, OAuth states and installations, for the install flow.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait InstallStore: Send + Sync {
    /// The install link whose token is `token` (the store keeps only a hash of it).
    fn link(&self, token: &str) -> impl Future<Output = Result<LinkState, StorageError>> + Send;

    /// A fresh one-time state for `tenant`, valid until `expires_at`, bound to a fresh browser
    /// secret. MAY delete a bounded number of the tenant's expired or consumed states.
    fn open_state(
        &self,
        tenant: TenantId,
        expires_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<OpenedState, StorageError>> + Send;

    /// Takes `state`: MUST refuse it unless it exists, is unexpired, unused and was opened
    /// with `browser`, and MUST consume it (atomically, so it is taken once) when it accepts it.
    fn take_state(
        &self,
        state: &str,
        browser: &str,
    ) -> impl Future<Output = Result<TakenState, StorageError>> + Send;

    /// Records what Slack granted and links the workspace to `tenant`, in one transaction;
    /// MUST change nothing and answer `Recorded::Taken` when the workspace belongs to another
    /// tenant. Tokens MUST be stored sealed.
    fn record(
        &self,
        tenant: TenantId,
        grant: &Grant,
    ) -> impl Future<Output = Result<Recorded, StorageError>> + Send;
}

/// Slack's OAuth endpoint.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait SlackOAuth: Send + Sync {
    /// Exchanges an authorization code (`oauth.v2.access`) for what the install granted.
    fn exchange(&self, code: &str) -> impl Future<Output = Result<Grant, OAuthError>> + Send;
}

/// The time, as a port so tests can fix it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

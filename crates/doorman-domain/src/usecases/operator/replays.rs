//! Replays as jobs: an operator asks for a tenant's kept events to be sent again; the job is
//! written with the events it selected (queued) and answered at once; an admin process takes
//! it and sends them one at a time through the live path after the claim, recording each
//! event's outcome (with an audit entry of its own) as it comes. A dry run says what a replay
//! would send, and changes nothing.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Operator, entry};
use crate::errors::OperatorError;
use crate::model::{
    Actor, AuditAction, Caller, JobCursor, KeyRefusal, NewReplayJob, Page, PageRequest, ReplayJob,
    ReplayJobId, ReplayOutcome, ReplayResult, ReplaySelection, Replayed, TenantId, counted,
};
use crate::ports::{
    AdminKeys, AgentBridge, Clock, Installations, OperatorPorts, ReceiptStore, ReplayJobs, StoredEvents,
    TenantDirectory,
};
use crate::usecases::Inbound;

impl<P: OperatorPorts> Operator<P> {
    /// What a replay of `selection` would do, event by event: nothing is sent or changed, so
    /// a read-only caller may ask.
    pub async fn dry_run_replay<D, B, R, I, C, S>(
        &self,
        caller: &Caller,
        inbound: &Inbound<D, B, R, I, C>,
        stored: &S,
        tenant: TenantId,
        selection: &ReplaySelection,
    ) -> Result<Vec<Replayed>, OperatorError>
    where
        D: TenantDirectory,
        B: AgentBridge,
        R: ReceiptStore,
        I: Installations,
        C: Clock,
        S: StoredEvents,
    {
        self.visible(caller, tenant).await?;
        Ok(inbound.replay(stored, tenant, selection, self.settings.replay_hold, true).await?)
    }

    /// Makes a replay job of the events `selection` names (in claim order; one event named
    /// by id is in it even without a receipt, and ends `unknown`), audited with what it
    /// selected. Answered queued for an admin process to run ([`Operator::run_replay_job`]),
    /// or, with `run_here`, held by the caller for that long: it runs the job itself and no
    /// admin process takes it meanwhile.
    pub async fn start_replay<S: StoredEvents>(
        &self,
        caller: &Caller,
        stored: &S,
        tenant: TenantId,
        selection: &ReplaySelection,
        run_here: Option<Duration>,
    ) -> Result<ReplayJob, OperatorError> {
        self.writable(caller, tenant).await?;
        let mut events: Vec<_> =
            stored.select(tenant, selection).await?.into_iter().map(|r| r.receipt.key.external_id).collect();
        // Each event named by id is in the job, found or not (it ends `unknown`).
        for id in selection.named() {
            if !events.contains(id) {
                events.push(id.clone());
            }
        }
        let job = NewReplayJob {
            id: ReplayJobId::generate(),
            tenant,
            selection: selection.describe(),
            requested_by: caller.clone(),
            events,
            held_until: run_here.map(|hold_for| self.until(hold_for)),
        };
        let target = format!("job {}: {} ({})", job.id, job.selection, counted(job.events.len(), "event"));
        self.ports.jobs().create(&job, &entry(caller, AuditAction::EventsReplay, tenant, target)).await?;
        let total = u32::try_from(job.events.len()).unwrap_or(u32::MAX);
        Ok(ReplayJob {
            id: job.id,
            tenant,
            selection: job.selection,
            requested_by: job.requested_by,
            created_at: self.ports.clock().now(),
            started_at: job.held_until.map(|_| self.ports.clock().now()),
            finished_at: None,
            total,
            done: 0,
            succeeded: 0,
            events: Vec::new(),
        })
    }

    /// Sends a job's events that have no outcome yet, one at a time, recording each outcome
    /// with its own audit entry (on behalf of whoever asked for the job), renewing the job's
    /// hold after each (`hold_for` must outlast one event's replay), then marks it finished.
    /// Safe to run again after a process stopped: recorded events are not sent again.
    ///
    /// Each event is sent on behalf of the key that asked for the job, so that key is checked
    /// before each one, as it would be by a request: once it is revoked, expired or gone (with
    /// its tenant), the events left are recorded as not sent, saying why, and the job ends.
    pub async fn run_replay_job<D, B, R, I, C, S>(
        &self,
        inbound: &Inbound<D, B, R, I, C>,
        stored: &S,
        tenant: TenantId,
        id: ReplayJobId,
        hold_for: Duration,
    ) -> Result<(), OperatorError>
    where
        D: TenantDirectory,
        B: AgentBridge,
        R: ReceiptStore,
        I: Installations,
        C: Clock,
        S: StoredEvents,
    {
        let jobs = self.ports.jobs();
        let job = jobs
            .get(tenant, id)
            .await?
            .ok_or(OperatorError::NotFound { what: "replay job", id: id.to_string() })?;
        let pending = jobs.pending(tenant, id).await?;
        let count = pending.len();
        for (tried, (position, event)) in pending.into_iter().enumerate() {
            if let Some(refused) = self.requester_refused(&job.requested_by).await? {
                let outcome = ReplayOutcome::NotSent(refused);
                let left = counted(count - tried, "event");
                let target = format!("{left} left: {} (job {id})", outcome.detail());
                let audit = entry(&job.requested_by, AuditAction::EventReplay, tenant, target);
                return Ok(jobs.refuse_pending(tenant, id, &outcome, &audit).await?);
            }
            let started_at = self.ports.clock().now();
            let (outcome, failure_before) =
                inbound.replay_event(stored, tenant, &event, self.settings.replay_hold).await;
            let result =
                ReplayResult { started_at, ended_at: self.ports.clock().now(), outcome, failure_before };
            let detail = result.outcome.detail();
            let audit = entry(
                &job.requested_by,
                AuditAction::EventReplay,
                tenant,
                format!("{event}: {} (job {id})", result.outcome.as_str()),
            );
            jobs.record(tenant, id, position, &result, &detail, &audit).await?;
            jobs.hold(tenant, id, self.until(hold_for)).await?;
        }
        Ok(jobs.finish(tenant, id).await?)
    }

    /// Why the key that asked for a job may no longer act for it, or `None` when it may (a
    /// job the command line asked for: no key).
    async fn requester_refused(&self, requester: &Caller) -> Result<Option<String>, OperatorError> {
        let Actor::Key(key) = &requester.actor else { return Ok(None) };
        let refusal = match self.ports.keys().get(key.id).await? {
            None => Some(KeyRefusal::Unknown),
            Some(found) => found.refusal_at(self.ports.clock().now()),
        };
        Ok(refusal.map(|refusal| {
            let what = match refusal {
                KeyRefusal::Revoked => "was revoked",
                KeyRefusal::Expired => "has expired",
                _ => "no longer exists",
            };
            format!("the key that asked for the job ({}) {what}", key.id)
        }))
    }

    /// One of the tenant's replay jobs, with each event's outcome so far.
    pub async fn replay_job(
        &self,
        caller: &Caller,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> Result<ReplayJob, OperatorError> {
        self.visible(caller, tenant).await?;
        self.ports
            .jobs()
            .get(tenant, id)
            .await?
            .ok_or_else(|| OperatorError::NotFound { what: "replay job", id: id.to_string() })
    }

    /// The tenant's replay jobs, newest first.
    pub async fn replay_jobs(
        &self,
        caller: &Caller,
        tenant: TenantId,
        page: &PageRequest<JobCursor>,
    ) -> Result<Page<ReplayJob, JobCursor>, OperatorError> {
        self.visible(caller, tenant).await?;
        Ok(self.ports.jobs().list(tenant, page).await?)
    }

    /// Takes the next job a process should run, held for `hold_for`.
    pub async fn take_replay_job(
        &self,
        hold_for: Duration,
    ) -> Result<Option<(TenantId, ReplayJobId)>, OperatorError> {
        Ok(self.ports.jobs().take(self.until(hold_for)).await?)
    }

    fn until(&self, hold_for: Duration) -> DateTime<Utc> {
        self.ports.clock().now() + chrono::Duration::from_std(hold_for).unwrap_or(chrono::Duration::MAX)
    }
}

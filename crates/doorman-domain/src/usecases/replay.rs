//! Replay: an operator sends acknowledged events to their agent again, one at a time, from
//! the payloads their tenant kept. Each goes through the same steps as a live delivery after
//! its claim — the directory, the agent's settings, the bridge's circuit and bounds, the
//! installation's token, and the receipt's outcome — never around them.

use std::time::Duration;

use super::Inbound;
use super::acknowledge::Admission;
use super::handle::Handled;
use crate::errors::StorageError;
use crate::model::{
    ExternalEventId, Failure, Job, Platform, ReceiptKey, ReceiptRecord, ReplayOutcome, ReplaySelection,
    ReplayTake, Replayed, TenantId,
};
use crate::ports::{AgentBridge, Clock, Installations, ReceiptStore, StoredEvents, TenantDirectory};

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
    B: AgentBridge,
    R: ReceiptStore,
    I: Installations,
    C: Clock,
{
    /// Replays the tenant's receipts that `selection` names, in claim order, and reports what
    /// became of each. A handled receipt, or one without a kept payload, is refused and
    /// named, and so is one event named by id that has no receipt (`Unknown`); with `dry_run`
    /// nothing is sent or changed. Each replay holds its event for
    /// `hold` (longer than a dispatch can take) so two replays never overlap.
    pub async fn replay<S: StoredEvents>(
        &self,
        stored: &S,
        tenant: TenantId,
        selection: &ReplaySelection,
        hold: Duration,
        dry_run: bool,
    ) -> Result<Vec<Replayed>, StorageError> {
        let candidates = stored.select(tenant, selection).await?;
        let mut report = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            let outcome = self.replay_one(stored, tenant, &candidate, hold, dry_run).await;
            tracing::info!(
                tenant.id = %tenant,
                event.id = %candidate.receipt.key.external_id,
                outcome = outcome.as_str(),
                "replay"
            );
            report.push(Replayed { key: candidate.receipt.key, outcome });
        }
        // Named, and not there: each such event is reported, not silently left out.
        for id in selection.named() {
            if !report.iter().any(|replayed| &replayed.key.external_id == id) {
                let key = ReceiptKey { tenant, platform: Platform::Slack, external_id: id.clone() };
                report.push(Replayed { key, outcome: ReplayOutcome::Unknown });
            }
        }
        Ok(report)
    }

    /// Replays one event by id (a replay job's next), and says what its receipt's last
    /// failure was when the replay found it: how the dispatch before this one ended.
    pub async fn replay_event<S: StoredEvents>(
        &self,
        stored: &S,
        tenant: TenantId,
        event: &ExternalEventId,
        hold: Duration,
    ) -> (ReplayOutcome, Option<Failure>) {
        let selection = ReplaySelection::Event(event.clone());
        let candidate = match stored.select(tenant, &selection).await {
            Ok(found) => found.into_iter().next(),
            Err(error) => return (ReplayOutcome::NotSent(format!("storage: {error}")), None),
        };
        let Some(candidate) = candidate else { return (ReplayOutcome::Unknown, None) };
        let failure_before = candidate.receipt.failure.clone();
        let outcome = self.replay_one(stored, tenant, &candidate, hold, false).await;
        tracing::info!(tenant.id = %tenant, event.id = %event, outcome = outcome.as_str(), "replay");
        (outcome, failure_before)
    }

    async fn replay_one<S: StoredEvents>(
        &self,
        stored: &S,
        tenant: TenantId,
        candidate: &ReceiptRecord,
        hold: Duration,
        dry_run: bool,
    ) -> ReplayOutcome {
        let key = &candidate.receipt.key;
        if candidate.receipt.handled_at.is_some() {
            return ReplayOutcome::AlreadyHandled;
        }
        if !candidate.payload_kept {
            return ReplayOutcome::NoPayload;
        }
        if dry_run {
            return ReplayOutcome::WouldReplay;
        }
        let hold_until = self.clock.now() + chrono::Duration::from_std(hold).unwrap_or(chrono::Duration::MAX);
        let (event, claimed_at) = match stored.take(key, hold_until).await {
            Ok(ReplayTake::Event { event, claimed_at }) => (*event, claimed_at),
            Ok(ReplayTake::Handled) => return ReplayOutcome::AlreadyHandled,
            Ok(ReplayTake::NoPayload) => return ReplayOutcome::NoPayload,
            Ok(ReplayTake::InProgress) => return ReplayOutcome::InProgress,
            Ok(ReplayTake::Unknown) => return ReplayOutcome::Unknown,
            Err(error) => return ReplayOutcome::NotSent(format!("storage: {error}")),
        };
        let refused = match self.admit(&event).await {
            Admission::Admitted { tenant: found, agent, permit } if found.id == tenant => {
                let job =
                    Job::new(tenant, agent, event, claimed_at, permit).with_installation(found.installation);
                return match self.handle(job).await {
                    Handled::Delivered { .. } => ReplayOutcome::Handled,
                    Handled::DeliveredUnrecorded(_) => ReplayOutcome::HandledUnrecorded,
                    Handled::Failed { error, .. } => ReplayOutcome::Failed(error.to_string()),
                    Handled::NotSent(why) => ReplayOutcome::NotSent(why.to_string()),
                };
            }
            Admission::Admitted { .. } => "the workspace now belongs to another tenant".to_owned(),
            Admission::Ignored => "the workspace is no longer linked to a tenant".to_owned(),
            Admission::Unavailable(why) => why.to_string(),
        };
        if let Err(error) = stored.release(key).await {
            tracing::warn!(tenant.id = %tenant, event.id = %key.external_id, error = %error, "could not release a replay's hold; it expires on its own");
        }
        ReplayOutcome::NotSent(refused)
    }
}

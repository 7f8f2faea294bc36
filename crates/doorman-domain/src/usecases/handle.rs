//! Handle: what happens after the HTTP answer.

use super::Inbound;
use crate::errors::{DispatchError, RefreshError, StorageError};
use crate::model::{Claim, Delivered, Freshness, Installation, Job, Lifecycle};
use crate::ports::{AgentBridge, Clock, Installations, ReceiptStore, TenantDirectory, Unready};

/// What became of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The agent took the event; a numbered event's receipt is marked handled (with when the
    /// dispatch started and the agent's status) and
    /// `pruned` expired receipts of the tenant were deleted with it.
    Delivered { pruned: u64 },
    /// The agent took the event but the receipt could not be marked handled. The receipt
    /// stays claimed and unhandled, so operators see it as stranded; a retry is still a
    /// duplicate, so nothing is dispatched twice.
    DeliveredUnrecorded(StorageError),
    /// The agent did not take the event. For a numbered event the attempt is on record and
    /// its reason on the receipt when `recorded` is true; the receipt is never marked handled.
    Failed { error: DispatchError, recorded: bool },
    /// Nothing was sent: the job's unconfirmed claim does not hold the event, or could not
    /// be settled.
    NotSent(NotSent),
}

/// Why a job whose claim was not confirmed sent nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSent {
    /// The claim settled as another delivery's: that one dispatches.
    #[error("another delivery claimed the event")]
    ClaimedElsewhere,
    /// The claim could not be settled. If it was made, its receipt reads as stranded; if
    /// not, the platform's retry claims the event.
    #[error("the claim could not be settled: {0}")]
    Unsettled(StorageError),
}

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
    B: AgentBridge,
    R: ReceiptStore,
    I: Installations,
    C: Clock,
{
    /// Dispatches an accepted job — with the installation's bot token, refreshed first when it
    /// is about to expire — then applies the app's lifecycle event if it is one, then completes
    /// its receipt (on success) or records the failure (otherwise). Unnumbered jobs have no
    /// receipt and only dispatch. A job whose claim was not confirmed settles it first and
    /// goes on only if the claim holds the event.
    pub async fn handle(&self, mut job: Job) -> Handled {
        let mut admitted = Ok(());
        if let Some(claim) = job.unsettled_claim().cloned() {
            // Settling waits for the database, for minutes if it must: the job's place in the
            // bounded work (and its circuit's half-open probe, if it had it) goes back
            // meanwhile, and is taken again once the claim holds the event.
            job.give_back_permit();
            let key = &claim.key;
            match self.receipts.settle(&claim).await {
                Ok(Claim::Claimed) => tracing::info!(
                    tenant.id = %key.tenant,
                    event.id = %key.external_id,
                    "an unconfirmed claim holds the event; dispatching it"
                ),
                Ok(Claim::Duplicate) => return Handled::NotSent(NotSent::ClaimedElsewhere),
                Err(error) => {
                    tracing::error!(
                        tenant.id = %key.tenant,
                        event.id = %key.external_id,
                        error = %error,
                        "an unconfirmed claim could not be settled; nothing was sent (if it was made, it will be listed as stranded)"
                    );
                    return Handled::NotSent(NotSent::Unsettled(error));
                }
            }
            admitted = match self.bridge.admit(job.tenant()) {
                Ok(permit) => {
                    job.hold(permit);
                    Ok(())
                }
                Err(Unready::CircuitOpen) => {
                    Err(DispatchError::NotAdmitted("the agent's circuit is open".into()))
                }
                Err(Unready::Busy(bound)) => Err(DispatchError::NotAdmitted(format!(
                    "the {} bound on work in flight is full",
                    bound.as_str()
                ))),
            };
        }
        let key = job.receipt_key();
        // The attempt runs from just before the request to its answer (a refreshed token's
        // wait is before it, not in the agent's latency).
        let (started_at, outcome) = match admitted {
            Ok(()) => match self.authorization(&job).await {
                Ok(installation) => {
                    let started_at = self.clock.now();
                    (started_at, self.bridge.dispatch(&job, installation).await)
                }
                Err(error) => (self.clock.now(), Err(error)),
            },
            Err(error) => (self.clock.now(), Err(error)),
        };
        let ended_at = self.clock.now();
        if let Some(lifecycle) = &job.event().lifecycle {
            self.apply(&job, lifecycle).await;
        }
        let now = self.clock.now();
        let replay = job.event().delivery.replay;

        match (outcome, key) {
            (Ok(_), None) => Handled::Delivered { pruned: 0 },
            (Ok(status), Some(key)) => {
                let cutoff = self.retention.expiry_cutoff(now);
                let delivered = Delivered { started_at, ended_at, status, replay };
                match self.receipts.complete(&key, &delivered, cutoff, self.retention.prune_batch()).await {
                    Ok(completion) => Handled::Delivered { pruned: completion.pruned },
                    Err(error) => {
                        tracing::error!(
                            tenant.id = %key.tenant,
                            event.id = %key.external_id,
                            error = %error,
                            "event delivered but its receipt could not be marked handled; it will be listed as stranded"
                        );
                        Handled::DeliveredUnrecorded(error)
                    }
                }
            }
            (Err(error), None) => {
                tracing::warn!(tenant.id = %job.tenant(), error = %error, "dispatch of an unnumbered event failed");
                Handled::Failed { error, recorded: false }
            }
            (Err(error), Some(key)) => {
                let attempt = error.attempt(started_at, ended_at, replay);
                let recorded = match self.receipts.record_failure(&key, &attempt).await {
                    Ok(()) => true,
                    Err(store_error) => {
                        tracing::error!(
                            tenant.id = %key.tenant,
                            event.id = %key.external_id,
                            error = %store_error,
                            "could not record a dispatch failure; the receipt will be listed as stranded"
                        );
                        false
                    }
                };
                tracing::warn!(tenant.id = %key.tenant, event.id = %key.external_id, error = %error, "dispatch failed");
                Handled::Failed { error, recorded }
            }
        }
    }

    /// The installation the dispatch carries: as resolved, or refreshed when its token has
    /// less than five minutes left (here, after the answer: never on the acknowledgement path).
    async fn authorization(&self, job: &Job) -> Result<Option<Installation>, DispatchError> {
        let Some(installation) = job.installation() else { return Ok(None) };
        match installation.freshness(self.clock.now()) {
            Freshness::Fresh => return Ok(Some(installation.clone())),
            Freshness::Expired => {
                return Err(DispatchError::TokenRefreshFailed(
                    "the bot token expired and cannot be refreshed".into(),
                ));
            }
            Freshness::Refresh => {}
        }
        self.installations.refresh(job.tenant(), installation).await.map(Some).map_err(|error| match error {
            RefreshError::Storage(error) => DispatchError::TokenStorageFailed(error.to_string()),
            refused @ (RefreshError::Slack(_) | RefreshError::NotConfigured) => {
                DispatchError::TokenRefreshFailed(refused.to_string())
            }
        })
    }

    /// Applies an uninstall or a revocation once the agent has had the event; a failure to
    /// apply it is logged (the event itself was handled).
    async fn apply(&self, job: &Job, lifecycle: &Lifecycle) {
        let workspace = &job.event().workspace;
        match self.installations.apply(job.tenant(), workspace, lifecycle).await {
            Ok(()) => {
                tracing::info!(tenant.id = %job.tenant(), workspace = %workspace, lifecycle = ?lifecycle, "applied the app's lifecycle event")
            }
            Err(error) => tracing::error!(
                tenant.id = %job.tenant(),
                workspace = %workspace,
                error = %error,
                "could not apply the app's lifecycle event; apply it with `doorman slack uninstall`"
            ),
        }
    }
}

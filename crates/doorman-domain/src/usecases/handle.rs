//! Handle: what happens after the HTTP answer.

use super::Inbound;
use crate::errors::{DispatchError, StorageError};
use crate::model::{Failure, Job};
use crate::ports::{AgentBridge, Clock, ReceiptStore, TenantDirectory};

/// What became of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// The agent took the event; a numbered event's receipt is marked handled and
    /// `pruned` expired receipts of the tenant were deleted with it.
    Delivered { pruned: u64 },
    /// The agent took the event but the receipt could not be marked handled. The receipt
    /// stays claimed and unhandled, so operators see it as stranded; a retry is still a
    /// duplicate, so nothing is dispatched twice.
    DeliveredUnrecorded(StorageError),
    /// The agent did not take the event. For a numbered event the failure is stored on the
    /// receipt when `recorded` is true; the receipt is never marked handled.
    Failed { error: DispatchError, recorded: bool },
}

impl<D, B, R, C> Inbound<D, B, R, C>
where
    D: TenantDirectory,
    B: AgentBridge,
    R: ReceiptStore,
    C: Clock,
{
    /// Dispatches an accepted job, then completes its receipt (on success) or records the
    /// failure (otherwise). Unnumbered jobs have no receipt and only dispatch.
    pub async fn handle(&self, job: Job) -> Handled {
        let key = job.receipt_key();
        let outcome = self.bridge.dispatch(&job).await;
        let now = self.clock.now();

        match (outcome, key) {
            (Ok(()), None) => Handled::Delivered { pruned: 0 },
            (Ok(()), Some(key)) => {
                let cutoff = self.retention.expiry_cutoff(now);
                match self.receipts.complete(&key, now, cutoff, self.retention.prune_batch()).await {
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
                let failure = Failure { reason: error.to_string(), at: now };
                let recorded = match self.receipts.record_failure(&key, &failure).await {
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
}

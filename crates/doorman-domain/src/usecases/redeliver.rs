//! Redeliver: a tenant that turned redelivery on has each event its agent did not take sent
//! again on the tenant's schedule (ADR 26), through the same steps as a live delivery after its
//! claim — the directory, the agent's settings, the bridge's circuit and bounds, the
//! installation's token, and the receipt's outcome — never around them. Each redelivery is
//! Doorman's own dispatch of the event: its outcome is written as a live dispatch's is.

use std::time::Duration;

use super::Inbound;
use super::acknowledge::{Unavailability, Unresolved};
use crate::errors::{DispatchError, StorageError};
use crate::model::{Job, ReceiptKey, ScheduledTenant};
use crate::ports::{AgentBridge, Clock, Installations, ReceiptStore, Redeliveries, TenantDirectory};

impl<D, B, R, I, C> Inbound<D, B, R, I, C>
where
    D: TenantDirectory,
    B: AgentBridge,
    R: ReceiptStore,
    I: Installations,
    C: Clock,
{
    /// Takes at most `limit` of the tenant's due redeliveries, no more than the bridge admits
    /// now, and makes each a job for [`Inbound::handle`]. An open circuit takes none (they wait
    /// for it to close; the half-open probe may be one of them), and a bound on work in flight
    /// that is full takes fewer: live deliveries go first. Each is held for `hold` (longer than
    /// a dispatch may take), and an event no attempt finished is due only once its claim is
    /// older than `hold`. A taken event whose agent is paused meanwhile is put back, its
    /// redelivery not spent; one its tenant can no longer take at all is a failed attempt.
    pub async fn take_redeliveries<S: Redeliveries>(
        &self,
        store: &S,
        scheduled: &ScheduledTenant,
        limit: u32,
        hold: Duration,
    ) -> Result<Vec<Job>, StorageError> {
        let tenant = scheduled.tenant;
        let mut permits = Vec::new();
        while permits.len() < limit as usize {
            match self.bridge.admit(tenant) {
                Ok(permit) => permits.push(permit),
                Err(_) => break,
            }
        }
        if permits.is_empty() {
            return Ok(Vec::new());
        }
        let hold_until = self.clock.now() + chrono::Duration::from_std(hold).unwrap_or(chrono::Duration::MAX);
        let taken =
            store.take_due(tenant, &scheduled.schedule, permits.len() as u32, hold, hold_until).await?;
        let mut jobs = Vec::with_capacity(taken.len());
        for (redelivery, permit) in taken.into_iter().zip(permits) {
            let event = redelivery.event;
            let refused = match self.agent_for(&event).await {
                Ok((found, agent)) if found.id == tenant => {
                    jobs.push(
                        Job::new(tenant, agent, event, redelivery.claimed_at, permit)
                            .with_installation(found.installation),
                    );
                    continue;
                }
                Ok(_) => Refused::ForGood("the workspace now belongs to another tenant".to_owned()),
                Err(Unresolved::Ignored) => {
                    Refused::ForGood("the workspace is no longer linked to a tenant".to_owned())
                }
                // A pause ends with a resume, a store comes back: the redelivery waits, unspent.
                Err(Unresolved::Unavailable(
                    why @ (Unavailability::Paused { .. } | Unavailability::Storage(_)),
                )) => Refused::ForNow(why.to_string()),
                Err(Unresolved::Unavailable(why)) => Refused::ForGood(why.to_string()),
            };
            let Some(external_id) = event.external_id else { continue };
            let key = ReceiptKey { tenant, platform: event.platform, external_id };
            self.refused(store, &key, refused).await;
        }
        Ok(jobs)
    }

    /// A taken redelivery that was not sent: put back unspent when what refused it passes (a
    /// pause, the store), else recorded as a failed attempt (`not_admitted`), which ends its
    /// hold and spends it, so an event its tenant can no longer take is given up in time rather
    /// than put back forever.
    async fn refused<S: Redeliveries>(&self, store: &S, key: &ReceiptKey, refused: Refused) {
        match refused {
            Refused::ForNow(why) => {
                tracing::info!(tenant.id = %key.tenant, event.id = %key.external_id, why = %why, "redelivery put back");
                if let Err(error) = store.put_back(key).await {
                    tracing::warn!(tenant.id = %key.tenant, event.id = %key.external_id, error = %error, "could not put a redelivery back; its hold expires on its own");
                }
            }
            Refused::ForGood(why) => {
                tracing::warn!(tenant.id = %key.tenant, event.id = %key.external_id, why = %why, "redelivery not sent");
                let now = self.clock.now();
                let attempt = DispatchError::NotAdmitted(why).attempt(now, now, false);
                if let Err(error) = self.receipts.record_failure(key, &attempt).await {
                    tracing::warn!(tenant.id = %key.tenant, event.id = %key.external_id, error = %error, "could not record a redelivery not sent; its hold expires on its own");
                }
            }
        }
    }

    /// Gives up on at most `limit` of the tenant's events whose schedule is spent: each reads
    /// as failed (with its last attempt's reason) for good, and its payload is released unless
    /// the tenant keeps payloads for replay.
    pub async fn give_up_spent<S: Redeliveries>(
        &self,
        store: &S,
        scheduled: &ScheduledTenant,
        limit: u32,
    ) -> Result<Vec<ReceiptKey>, StorageError> {
        let given_up =
            store.give_up(scheduled.tenant, &scheduled.schedule, limit, scheduled.retains_payloads).await?;
        for key in &given_up {
            tracing::warn!(
                tenant.id = %key.tenant,
                event.id = %key.external_id,
                redeliveries = scheduled.schedule.len(),
                "an event's redeliveries are spent; it stays failed"
            );
        }
        Ok(given_up)
    }
}

/// Why a taken redelivery was not sent.
enum Refused {
    /// What refused it passes (a pause, the store): put it back, unspent.
    ForNow(String),
    /// It cannot be sent to this tenant's agent as things are (its workspace moved, no agent,
    /// settings not valid): an attempt that failed.
    ForGood(String),
}

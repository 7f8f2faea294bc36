//! The operational webhook's sender (issue 41): in every serving process, when the deployment
//! has an operational webhook, the operational events recorded in the outbox are taken (held
//! from other processes), sent, and marked delivered, or failed and due again after the
//! schedule's next delay, or given up once it is spent (logged). Delivered and given-up ones
//! are pruned after a week.
//!
//! The sender looks once a second, and again at once while a backlog drains (a pass that took
//! all it asked for). A pass's messages are sent together, so each is marked well inside its
//! hold. Without the webhook nothing runs and the producers get no outbox: nothing is
//! recorded.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use doorman_adapters::bridge::OperationalWebhook;
use doorman_adapters::postgres::{AfterFailure, OperationalMessage, PgOperationalOutbox, PgPool};
use doorman_domain::OperationalEvent;
use doorman_domain::ports::OperationalOutbox;
use tokio::sync::watch;

use super::metrics::Metrics;
use crate::config::OperationalWebhookConfig;

/// The most messages one pass takes and sends at once.
const BATCH: u32 = 16;

/// How often what ended is pruned, and how much at most each time.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
const PRUNE_BATCH: u32 = 1000;

/// The operational webhook, when the deployment has one: the outbox the producers record
/// through, and the sender that empties it.
#[derive(Debug)]
pub struct Operational {
    pub outbox: PgOperationalOutbox,
    pub sender: OperationalTask,
}

/// Starts the sender on the current runtime, over `pool` (the background pool); `None` when
/// no operational webhook is configured (then nothing may be recorded: there is no outbox).
pub fn start(
    pool: &PgPool,
    config: Option<&OperationalWebhookConfig>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Option<Operational>> {
    let Some(config) = config else {
        return Ok(None);
    };
    let outbox = PgOperationalOutbox::new(pool.clone());
    let sender = OperationalTask::spawn(outbox.clone(), config.clone(), metrics)?;
    Ok(Some(Operational { outbox, sender }))
}

/// The running sender; [`OperationalTask::stop`] ends it between two passes.
#[derive(Debug)]
pub struct OperationalTask {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl OperationalTask {
    pub fn spawn(
        outbox: PgOperationalOutbox,
        config: OperationalWebhookConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Self> {
        let webhook = OperationalWebhook::new(&config.webhook)
            .context("building the operational webhook's HTTP client")?;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(outbox, webhook, config, metrics, stopped));
        Ok(Self { stop, task })
    }

    /// Stops taking messages; a pass under way ends first (each attempt within its timeout).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn run(
    outbox: PgOperationalOutbox,
    webhook: OperationalWebhook,
    config: OperationalWebhookConfig,
    metrics: Arc<Metrics>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut pruned_at: Option<tokio::time::Instant> = None;
    loop {
        if *stopped.borrow() {
            return;
        }
        if pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            match outbox.prune(config.keep_for, PRUNE_BATCH).await {
                Ok(pruned) => {
                    pruned_at = Some(tokio::time::Instant::now());
                    if pruned > 0 {
                        tracing::debug!(
                            pruned,
                            "operational events delivered or given up over a week ago deleted"
                        );
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %error, "could not prune the operational events; trying again")
                }
            }
        }
        let filled = match outbox.take_due(BATCH, config.hold).await {
            Ok(taken) => {
                let filled = taken.len() == BATCH as usize;
                let sends = taken.iter().map(|message| send(&outbox, &webhook, &config, &metrics, message));
                futures_util::future::join_all(sends).await;
                filled
            }
            Err(error) => {
                tracing::warn!(error = %error, "could not take the due operational events; trying again");
                false
            }
        };
        if filled {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(config.every) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// One attempt of one message, and what it leaves in the outbox. A mark that cannot be written
/// leaves the message held: it is sent again, as the same message, when the hold ends.
async fn send(
    outbox: &PgOperationalOutbox,
    webhook: &OperationalWebhook,
    config: &OperationalWebhookConfig,
    metrics: &Metrics,
    message: &OperationalMessage,
) {
    let event = &message.event;
    let attempt = message.attempts + 1;
    let failure = match webhook.send(message.id, event).await {
        Ok(_) => {
            metrics.operational_webhook("delivered");
            if let Err(error) = outbox.delivered(message.id).await {
                tracing::warn!(operational.id = %message.id, error = %error, "an operational event was delivered and could not be marked so; it will be sent again");
            }
            return;
        }
        Err(failure) => failure,
    };
    match outbox.failed(message.id, &config.schedule, &failure.0).await {
        Ok(AfterFailure::RetryAt(at)) => {
            metrics.operational_webhook("failed");
            tracing::warn!(
                operational.id = %message.id,
                operational.type = event.kind.as_str(),
                tenant.id = %event.tenant,
                attempt,
                reason = %failure,
                next_attempt_at = %at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "the operational webhook did not take an event; it is sent again later"
            );
        }
        Ok(AfterFailure::GaveUp) => {
            metrics.operational_webhook("given_up");
            tracing::error!(
                operational.id = %message.id,
                operational.type = event.kind.as_str(),
                tenant.id = %event.tenant,
                event.id = event.external_event_id.as_ref().map(|id| id.as_str()),
                attempts = attempt,
                reason = %failure,
                "the operational webhook did not take an event on any attempt of its schedule; given up"
            );
        }
        Ok(AfterFailure::AlreadyEnded) => metrics.operational_webhook("failed"),
        Err(error) => {
            metrics.operational_webhook("failed");
            tracing::warn!(operational.id = %message.id, error = %error, "an operational event's failed attempt could not be recorded; it will be sent again");
        }
    }
}

/// Records `events` for the operational webhook, when there is one.
pub async fn tell(outbox: Option<&PgOperationalOutbox>, events: &[OperationalEvent]) {
    let Some(outbox) = outbox else { return };
    if events.is_empty() {
        return;
    }
    if let Err(error) = outbox.record(events).await {
        tracing::warn!(error = %error, events = events.len(), "could not record operational events; the platform is not told of them");
    }
}

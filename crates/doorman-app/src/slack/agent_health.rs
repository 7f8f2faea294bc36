//! Agent health (issue 41): each circuit that opens or closes in this process is kept as since
//! when the tenant's agent has been failing (so the time survives restarts and adds up across
//! processes), and every agent failing for longer than `DOORMAN_AGENT_DISABLE_AFTER` is
//! disabled — paused by Doorman itself and audited — checked once a minute (sooner when the
//! setting is short). An operator's resume undoes it. Each opening, closing and disabling is
//! recorded for the operational webhook, when the deployment has one.

use std::time::Duration;

use chrono::Utc;
use doorman_adapters::bridge::CircuitChange;
use doorman_adapters::postgres::{PgAgentHealth, PgOperationalOutbox};
use doorman_domain::{OperationalEvent, OperationalKind, TenantId};
use tokio::sync::mpsc;

/// The longest wait between two looks for agents to disable.
const LOOK_AT_MOST_EVERY: Duration = Duration::from_secs(60);

/// How long an agent stays failing without a process seeing it fail again (a failed probe
/// comes once per circuit cooldown while deliveries come): this many cooldowns, at least a
/// minute. Past it, its process died or no delivery came, and it is failing no more.
pub fn seen_within(cooldown: Duration) -> Duration {
    (cooldown * 10).max(Duration::from_secs(60))
}

/// Runs until aborted. `disable_after`: `None` never disables; `seen_within`: see
/// [`seen_within`].
pub fn spawn(
    changes: Option<mpsc::Receiver<CircuitChange>>,
    health: PgAgentHealth,
    outbox: Option<PgOperationalOutbox>,
    disable_after: Option<Duration>,
    seen_within: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = disable_after.map_or(LOOK_AT_MOST_EVERY, |after| {
            (after / 2).clamp(Duration::from_secs(1), LOOK_AT_MOST_EVERY)
        });
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut changes = changes;
        loop {
            tokio::select! {
                change = next(&mut changes) => match change {
                    Some(change) => {
                        keep(&health, change).await;
                        let told: Vec<OperationalEvent> = circuit_event(change).into_iter().collect();
                        super::operational::tell(outbox.as_ref(), &told).await;
                    }
                    None => changes = None,
                },
                _ = ticks.tick(), if disable_after.is_some() => {
                    if let Some(after) = disable_after {
                        let disabled = disable(&health, after, seen_within).await;
                        super::operational::tell(outbox.as_ref(), &disabled).await;
                    }
                }
            }
        }
    })
}

/// The next change, or never once there are none (no subscription, or its sender is gone).
async fn next(changes: &mut Option<mpsc::Receiver<CircuitChange>>) -> Option<CircuitChange> {
    match changes {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

async fn keep(health: &PgAgentHealth, change: CircuitChange) {
    let (tenant, kept) = match change {
        CircuitChange::Opened { tenant, failing_since } => {
            tracing::warn!(tenant.id = %tenant, failing_since = %failing_since, "the agent's circuit opened");
            (tenant, health.failing(tenant, failing_since).await)
        }
        CircuitChange::StillFailing { tenant, failing_since } => {
            tracing::debug!(tenant.id = %tenant, failing_since = %failing_since, "the agent's circuit opened again: its probe failed");
            (tenant, health.failing(tenant, failing_since).await)
        }
        CircuitChange::Closed { tenant } => {
            tracing::info!(tenant.id = %tenant, "the agent's circuit closed: it answers again");
            (tenant, health.recovered(tenant).await)
        }
    };
    if let Err(error) = kept {
        tracing::warn!(tenant.id = %tenant, error = %error, "could not keep since when the agent has been failing; its next circuit change tries again");
    }
}

/// Disables the agents failing too long; what to tell the platform of them.
async fn disable(health: &PgAgentHealth, after: Duration, seen_within: Duration) -> Vec<OperationalEvent> {
    let ago = |d: Duration| Utc::now() - chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
    match health.disable_failing(ago(after), ago(seen_within)).await {
        Ok(disabled) => disabled
            .into_iter()
            .map(|(tenant, since)| {
                tracing::error!(
                    tenant.id = %tenant,
                    failing_since = %since,
                    "agent disabled: every delivery has failed for longer than DOORMAN_AGENT_DISABLE_AFTER; deliveries are answered 503 until an operator resumes it"
                );
                event(OperationalKind::AgentDisabled, tenant, Some(format!("failing since {}", since.to_rfc3339())))
            })
            .collect(),
        Err(error) => {
            tracing::warn!(error = %error, "could not look for agents failing too long; trying again");
            Vec::new()
        }
    }
}

/// What the platform is told of a circuit change: its opening and its closing, not each
/// failed probe in between.
fn circuit_event(change: CircuitChange) -> Option<OperationalEvent> {
    match change {
        CircuitChange::Opened { tenant, failing_since } => Some(event(
            OperationalKind::AgentCircuitOpened,
            tenant,
            Some(format!("failing since {}", failing_since.to_rfc3339())),
        )),
        CircuitChange::StillFailing { .. } => None,
        CircuitChange::Closed { tenant } => Some(event(OperationalKind::AgentCircuitClosed, tenant, None)),
    }
}

fn event(kind: OperationalKind, tenant: TenantId, detail: Option<String>) -> OperationalEvent {
    OperationalEvent { kind, tenant, external_event_id: None, at: Utc::now(), detail }
}

//! Per-tenant circuit breaker: closed, open, half-open.
//!
//! After `failures` consecutive failed dispatches a tenant's circuit opens for `cooldown`:
//! deliveries for it are answered 503 (nothing claimed), so Slack retries them later instead
//! of Doorman piling claims onto an agent that is down. When the cooldown ends the circuit is
//! half-open: exactly one delivery is let through as a probe and every other is still refused.
//! The probe's success closes the circuit; its failure opens it again for another cooldown. A
//! probe that never dispatches (its claim was a duplicate, say) gives its turn back when its
//! permit is dropped, so the next delivery probes instead.
//!
//! State is per process and in memory: each Doorman process learns on its own, which is
//! enough to stop hammering a dead agent and costs no database write per failure. A circuit
//! that opens, reopens after a failed probe, or closes is told to whoever
//! [subscribed](CircuitBreaker::subscribe): the serving process keeps since when the tenant's
//! agent has been failing and when it last saw it fail, and tells the platform (the operational
//! webhook) of openings and closings.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use doorman_domain::TenantId;
use tokio::sync::mpsc;

/// How many changes may wait for the subscriber; past it, a change is dropped and logged (the
/// next one of that tenant tells again).
const CHANGES_WAITING: usize = 1024;

/// A tenant's circuit opened or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitChange {
    /// It opened: `failing_since` is when the first of the failures that opened it happened.
    Opened { tenant: TenantId, failing_since: DateTime<Utc> },
    /// It opened again: the half-open probe failed too (the agent is seen failing still).
    StillFailing { tenant: TenantId, failing_since: DateTime<Utc> },
    /// A dispatch succeeded while it was open or half-open.
    Closed { tenant: TenantId },
}

#[derive(Debug, Clone, Copy)]
pub struct CircuitSettings {
    /// Consecutive failures that open the circuit.
    pub failures: NonZeroU32,
    /// How long it stays open before one probe is let through.
    pub cooldown: Duration,
}

impl Default for CircuitSettings {
    fn default() -> Self {
        Self { failures: const { NonZeroU32::new(5).unwrap() }, cooldown: Duration::from_secs(30) }
    }
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    /// Open until then; past it, half-open.
    open_until: Option<Instant>,
    /// The probe let through in this half-open spell, if one is out.
    probe: Option<u64>,
    /// When the first of the consecutive failures happened.
    failing_since: Option<DateTime<Utc>>,
}

#[derive(Debug, Default)]
struct Tenants {
    states: HashMap<TenantId, State>,
    next_probe: u64,
}

/// The circuit is open: refuse the delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open;

#[derive(Debug, Clone, Default)]
pub struct CircuitBreaker {
    settings: CircuitSettings,
    tenants: Arc<Mutex<Tenants>>,
    changes: Arc<std::sync::OnceLock<mpsc::Sender<CircuitChange>>>,
}

impl CircuitBreaker {
    pub fn new(settings: CircuitSettings) -> Self {
        Self { settings, tenants: Arc::default(), changes: Arc::default() }
    }

    /// Every circuit that opens or closes from now on, in order; `None` when someone already
    /// subscribed (there is one subscriber per process).
    pub fn subscribe(&self) -> Option<mpsc::Receiver<CircuitChange>> {
        let (sender, receiver) = mpsc::channel(CHANGES_WAITING);
        self.changes.set(sender).ok().map(|()| receiver)
    }

    fn tell(&self, change: CircuitChange) {
        if let Some(changes) = self.changes.get()
            && changes.try_send(change).is_err()
        {
            tracing::warn!(change = ?change, "a circuit change could not be passed on (too many waiting); it is not recorded");
        }
    }

    /// Whether a delivery of `tenant` may go ahead at `now`: `Ok(None)` while closed,
    /// `Ok(Some(probe))` for the one delivery let through once the cooldown has ended (hold
    /// the probe until its dispatch has ended), `Err(Open)` otherwise.
    pub fn admit(&self, tenant: TenantId, now: Instant) -> Result<Option<Probe>, Open> {
        let mut tenants = self.lock();
        let next = tenants.next_probe;
        let Some(state) = tenants.states.get_mut(&tenant) else { return Ok(None) };
        match state.open_until {
            None => Ok(None),
            Some(until) if now < until => Err(Open),
            Some(_) if state.probe.is_some() => Err(Open),
            Some(_) => {
                state.probe = Some(next);
                tenants.next_probe += 1;
                Ok(Some(Probe { tenants: self.tenants.clone(), tenant, id: next }))
            }
        }
    }

    /// Whether the tenant's circuit is open (or half-open with its probe out) at `now`.
    pub fn is_open(&self, tenant: TenantId, now: Instant) -> bool {
        self.lock().states.get(&tenant).is_some_and(|s| refusing(s, now))
    }

    /// A dispatch succeeded: the circuit closes and its count restarts.
    pub fn record_success(&self, tenant: TenantId) {
        let removed = self.lock().states.remove(&tenant);
        if removed.is_some_and(|state| state.open_until.is_some()) {
            self.tell(CircuitChange::Closed { tenant });
        }
    }

    /// A dispatch failed. Returns true when this failure opened (or reopened) the circuit: the
    /// count reached `failures`, or the circuit was half-open.
    pub fn record_failure(&self, tenant: TenantId, now: Instant) -> bool {
        let mut tenants = self.lock();
        let state = tenants.states.entry(tenant).or_default();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        let failing_since = *state.failing_since.get_or_insert_with(Utc::now);
        let half_open = state.open_until.is_some_and(|until| now >= until);
        if half_open || state.consecutive_failures >= self.settings.failures.get() {
            let opens = state.open_until.is_none();
            state.open_until = Some(now + self.settings.cooldown);
            state.probe = None;
            drop(tenants);
            self.tell(if opens {
                CircuitChange::Opened { tenant, failing_since }
            } else {
                CircuitChange::StillFailing { tenant, failing_since }
            });
            return true;
        }
        false
    }

    /// How many tenants' circuits refuse deliveries now (a metric).
    pub fn open_count(&self, now: Instant) -> usize {
        self.lock().states.values().filter(|s| refusing(s, now)).count()
    }

    fn lock(&self) -> MutexGuard<'_, Tenants> {
        lock(&self.tenants)
    }
}

fn refusing(state: &State, now: Instant) -> bool {
    state.open_until.is_some_and(|until| now < until || state.probe.is_some())
}

fn lock(tenants: &Mutex<Tenants>) -> MutexGuard<'_, Tenants> {
    // A panic while holding this lock cannot leave the map inconsistent (every update is a
    // few assignments to one state), so a poisoned lock is still usable.
    tenants.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The half-open circuit's one probe. Dropped without an outcome recorded (the delivery was
/// never dispatched), it gives the turn back so the next delivery probes.
#[derive(Debug)]
pub struct Probe {
    tenants: Arc<Mutex<Tenants>>,
    tenant: TenantId,
    id: u64,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let mut tenants = lock(&self.tenants);
        if let Some(state) = tenants.states.get_mut(&self.tenant)
            && state.probe == Some(self.id)
        {
            state.probe = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_is_told_when_a_circuit_opens_and_closes_not_when_it_reopens() {
        let breaker = breaker(2);
        let mut changes = breaker.subscribe().expect("the first subscriber");
        assert!(breaker.subscribe().is_none(), "one subscriber");
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        let before = Utc::now();
        breaker.record_failure(tenant, t0);
        let first_failed_by = Utc::now();
        assert!(changes.try_recv().is_err(), "one failure opens nothing");
        std::thread::sleep(Duration::from_millis(20));
        breaker.record_failure(tenant, t0);
        let Ok(CircuitChange::Opened { tenant: opened, failing_since }) = changes.try_recv() else {
            panic!("opened")
        };
        assert_eq!(opened, tenant);
        assert!(
            failing_since >= before && failing_since <= first_failed_by,
            "since the first failure, not the opening"
        );
        let ended = t0 + Duration::from_secs(30);
        let probe = breaker.admit(tenant, ended).unwrap().expect("the probe");
        breaker.record_failure(tenant, ended);
        drop(probe);
        assert_eq!(
            changes.try_recv().unwrap(),
            CircuitChange::StillFailing { tenant, failing_since },
            "a failed probe reopens it: still failing, since the same first failure"
        );
        breaker.record_success(tenant);
        assert_eq!(changes.try_recv().unwrap(), CircuitChange::Closed { tenant });
        breaker.record_success(tenant);
        assert!(changes.try_recv().is_err(), "closed already: no news");
    }

    fn breaker(failures: u32) -> CircuitBreaker {
        CircuitBreaker::new(CircuitSettings {
            failures: NonZeroU32::new(failures).unwrap(),
            cooldown: Duration::from_secs(30),
        })
    }

    #[test]
    fn the_circuit_opens_after_n_failures_and_refuses_until_the_cooldown_ends() {
        let breaker = breaker(3);
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        assert!(!breaker.record_failure(tenant, t0));
        assert!(!breaker.record_failure(tenant, t0));
        assert!(breaker.admit(tenant, t0).unwrap().is_none(), "still closed");
        assert!(breaker.record_failure(tenant, t0));
        assert_eq!(breaker.admit(tenant, t0 + Duration::from_secs(29)).unwrap_err(), Open);
        assert_eq!(breaker.open_count(t0), 1);
    }

    #[test]
    fn after_the_cooldown_exactly_one_probe_goes_and_its_success_closes_the_circuit() {
        let breaker = breaker(1);
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        breaker.record_failure(tenant, t0);
        let ended = t0 + Duration::from_secs(30);
        let probe = breaker.admit(tenant, ended).unwrap().expect("the probe");
        for _ in 0..49 {
            assert_eq!(breaker.admit(tenant, ended).unwrap_err(), Open, "one probe at a time");
        }
        assert!(breaker.is_open(tenant, ended));
        breaker.record_success(tenant);
        drop(probe);
        assert!(breaker.admit(tenant, ended).unwrap().is_none(), "closed");
        assert_eq!(breaker.open_count(ended), 0);
    }

    #[test]
    fn a_failed_probe_opens_the_circuit_for_another_cooldown() {
        let breaker = breaker(5);
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        for _ in 0..5 {
            breaker.record_failure(tenant, t0);
        }
        let ended = t0 + Duration::from_secs(30);
        let probe = breaker.admit(tenant, ended).unwrap().expect("the probe");
        assert!(breaker.record_failure(tenant, ended), "a half-open failure reopens at once");
        drop(probe);
        assert_eq!(breaker.admit(tenant, ended + Duration::from_secs(29)).unwrap_err(), Open);
        assert!(breaker.admit(tenant, ended + Duration::from_secs(30)).unwrap().is_some(), "the next probe");
    }

    #[test]
    fn a_probe_that_never_dispatched_gives_its_turn_back() {
        let breaker = breaker(1);
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        breaker.record_failure(tenant, t0);
        let ended = t0 + Duration::from_secs(30);
        drop(breaker.admit(tenant, ended).unwrap().expect("the probe"));
        assert!(breaker.admit(tenant, ended).unwrap().is_some(), "the next delivery probes");
    }

    #[test]
    fn fifty_deliveries_at_the_end_of_the_cooldown_let_exactly_one_through() {
        let breaker = breaker(1);
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        breaker.record_failure(tenant, t0);
        let ended = t0 + Duration::from_secs(30);
        let admitted: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..50).map(|_| scope.spawn(|| breaker.admit(tenant, ended))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(admitted.iter().filter(|a| matches!(a, Ok(Some(_)))).count(), 1);
        assert_eq!(admitted.iter().filter(|a| a.is_err()).count(), 49);
    }

    #[test]
    fn a_success_resets_the_count_and_tenants_are_independent() {
        let breaker = breaker(2);
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let t0 = Instant::now();
        breaker.record_failure(a, t0);
        breaker.record_success(a);
        assert!(!breaker.record_failure(a, t0), "the count restarted");
        breaker.record_failure(b, t0);
        assert!(breaker.record_failure(b, t0));
        assert!(!breaker.is_open(a, t0));
        assert!(breaker.is_open(b, t0));
    }
}

//! Per-tenant circuit breaker.
//!
//! After `failures` consecutive failed dispatches a tenant's circuit opens for `cooldown`:
//! deliveries for it are answered 503 (nothing claimed), so Slack retries them later instead
//! of Doorman piling claims onto an agent that is down. After the cooldown one dispatch is
//! let through; a success closes the circuit, a failure reopens it at once.
//!
//! State is per process and in memory: each Doorman process learns on its own, which is
//! enough to stop hammering a dead agent and costs no database write per failure.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use doorman_domain::TenantId;

#[derive(Debug, Clone, Copy)]
pub struct CircuitSettings {
    /// Consecutive failures that open the circuit.
    pub failures: NonZeroU32,
    /// How long it stays open.
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
    open_until: Option<Instant>,
}

#[derive(Debug, Default)]
pub struct CircuitBreaker {
    settings: CircuitSettings,
    tenants: Mutex<HashMap<TenantId, State>>,
}

impl CircuitBreaker {
    pub fn new(settings: CircuitSettings) -> Self {
        Self { settings, tenants: Mutex::default() }
    }

    /// Whether the tenant's circuit is open at `now`.
    pub fn is_open(&self, tenant: TenantId, now: Instant) -> bool {
        self.lock().get(&tenant).and_then(|s| s.open_until).is_some_and(|until| now < until)
    }

    pub fn record_success(&self, tenant: TenantId) {
        self.lock().remove(&tenant);
    }

    /// Returns true when this failure opened (or reopened) the circuit.
    pub fn record_failure(&self, tenant: TenantId, now: Instant) -> bool {
        let mut tenants = self.lock();
        let state = tenants.entry(tenant).or_default();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        if state.consecutive_failures >= self.settings.failures.get() {
            state.open_until = Some(now + self.settings.cooldown);
            return true;
        }
        false
    }

    /// How many tenants' circuits are open now (a metric).
    pub fn open_count(&self, now: Instant) -> usize {
        self.lock().values().filter(|s| s.open_until.is_some_and(|until| now < until)).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TenantId, State>> {
        // A panic while holding this lock cannot leave the map inconsistent (every update is
        // a single assignment), so a poisoned lock is still usable.
        self.tenants.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_circuit_opens_after_n_failures_and_closes_after_the_cooldown() {
        let breaker = CircuitBreaker::new(CircuitSettings {
            failures: NonZeroU32::new(3).unwrap(),
            cooldown: Duration::from_secs(30),
        });
        let tenant = TenantId::generate();
        let t0 = Instant::now();
        assert!(!breaker.record_failure(tenant, t0));
        assert!(!breaker.record_failure(tenant, t0));
        assert!(!breaker.is_open(tenant, t0));
        assert!(breaker.record_failure(tenant, t0));
        assert!(breaker.is_open(tenant, t0 + Duration::from_secs(29)));
        assert_eq!(breaker.open_count(t0), 1);
        assert!(!breaker.is_open(tenant, t0 + Duration::from_secs(30)));
        // Half-open: one more failure reopens at once.
        assert!(breaker.record_failure(tenant, t0 + Duration::from_secs(31)));
        assert!(breaker.is_open(tenant, t0 + Duration::from_secs(32)));
    }

    #[test]
    fn a_success_resets_the_count_and_tenants_are_independent() {
        let breaker = CircuitBreaker::new(CircuitSettings {
            failures: NonZeroU32::new(2).unwrap(),
            cooldown: Duration::from_secs(30),
        });
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

//! Bounded work in flight, per tenant and per process.
//!
//! A delivery takes a place before anything is claimed and gives it back when its dispatch
//! has ended (the domain's `Permit`, held by the job). One tenant's slow agent can hold at most
//! its own bound, and the process at most its bound in all: past either, deliveries are
//! answered 503 with nothing written, so Slack holds the backlog rather than this process's
//! memory.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use doorman_domain::{Busy, TenantId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    /// Deliveries of one tenant in flight at once (also the most connections to its agent).
    pub per_tenant: NonZeroUsize,
    /// Deliveries in flight in the whole process.
    pub total: NonZeroUsize,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            per_tenant: const { NonZeroUsize::new(64).unwrap() },
            total: const { NonZeroUsize::new(1024).unwrap() },
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    tenants: HashMap<TenantId, usize>,
}

#[derive(Debug)]
struct Shared {
    settings: LimitSettings,
    counts: Mutex<Counts>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Every update is a pair of counter changes under the lock: a poisoned lock is still
        // consistent.
        self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[derive(Debug, Clone)]
pub struct InFlightLimits {
    shared: Arc<Shared>,
}

impl InFlightLimits {
    pub fn new(settings: LimitSettings) -> Self {
        Self { shared: Arc::new(Shared { settings, counts: Mutex::default() }) }
    }

    /// A place for one more delivery of `tenant`, or which bound it would exceed (nothing
    /// taken then).
    pub fn try_take(&self, tenant: TenantId) -> Result<Place, Busy> {
        let mut counts = self.shared.lock();
        if counts.total >= self.shared.settings.total.get() {
            return Err(Busy::Process);
        }
        let of_tenant = counts.tenants.entry(tenant).or_default();
        if *of_tenant >= self.shared.settings.per_tenant.get() {
            return Err(Busy::Tenant);
        }
        *of_tenant += 1;
        counts.total += 1;
        Ok(Place { shared: self.shared.clone(), tenant })
    }

    /// Deliveries holding a place now.
    pub fn in_flight(&self) -> usize {
        self.shared.lock().total
    }
}

/// One taken place; dropping it gives it back. The job's `Permit` holds it.
#[derive(Debug)]
pub struct Place {
    shared: Arc<Shared>,
    tenant: TenantId,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.shared.lock();
        counts.total = counts.total.saturating_sub(1);
        if let Some(of_tenant) = counts.tenants.get_mut(&self.tenant) {
            *of_tenant = of_tenant.saturating_sub(1);
            if *of_tenant == 0 {
                counts.tenants.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_tenant: usize, total: usize) -> InFlightLimits {
        InFlightLimits::new(LimitSettings {
            per_tenant: NonZeroUsize::new(per_tenant).unwrap(),
            total: NonZeroUsize::new(total).unwrap(),
        })
    }

    #[test]
    fn a_tenant_gets_at_most_its_bound_and_others_are_unaffected() {
        let limits = limits(2, 10);
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let held: Vec<_> = (0..2).map(|_| limits.try_take(a).unwrap()).collect();
        assert_eq!(limits.try_take(a).unwrap_err(), Busy::Tenant);
        let _b = limits.try_take(b).unwrap();
        assert_eq!(limits.in_flight(), 3);
        drop(held);
        assert_eq!(limits.in_flight(), 1);
        assert!(limits.try_take(a).is_ok(), "places given back");
    }

    #[test]
    fn the_process_bound_holds_across_tenants() {
        let limits = limits(5, 3);
        let held: Vec<_> = (0..3).map(|_| limits.try_take(TenantId::generate()).unwrap()).collect();
        assert_eq!(limits.try_take(TenantId::generate()).unwrap_err(), Busy::Process);
        drop(held);
        assert_eq!(limits.in_flight(), 0);
    }
}

//! Bounded work: a delivery takes a place before anything is claimed and gives it back when
//! its dispatch ends.

use std::fmt;

/// A place in the bounded work in flight. Held by the [`Job`](super::Job) from acknowledgement
/// until the dispatch ends; dropping it gives the place back.
pub struct Permit(#[allow(dead_code)] Option<Box<dyn Send + Sync>>);

impl Permit {
    /// A permit whose `guard` gives the place back when dropped.
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self(Some(Box::new(guard)))
    }

    /// A permit that holds no place (nothing is bounded), for tests.
    pub fn unbounded() -> Self {
        Self(None)
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Permit")
    }
}

/// Permits carry no value of their own: any two compare equal, so the values that hold them
/// (jobs, acknowledgements) compare on what they say.
impl PartialEq for Permit {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Permit {}

/// Which bound one more delivery would exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Busy {
    /// The tenant already has as many deliveries in flight as it may.
    Tenant,
    /// The process already has as many deliveries in flight as it may.
    Process,
}

impl Busy {
    pub const fn as_str(self) -> &'static str {
        match self {
            Busy::Tenant => "tenant",
            Busy::Process => "process",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_print_no_guard_and_compare_equal() {
        let (bounded, unbounded) = (Permit::new(()), Permit::unbounded());
        assert_eq!(format!("{bounded:?}"), "Permit");
        assert_eq!(bounded, unbounded, "values holding permits compare on what they say");
    }

    #[test]
    fn a_bound_is_named_by_the_word_metrics_and_logs_use() {
        assert_eq!((Busy::Tenant.as_str(), Busy::Process.as_str()), ("tenant", "process"));
    }
}

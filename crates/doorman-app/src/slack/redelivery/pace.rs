//! The redelivery runner's pace: at most so many redeliveries started per second in the
//! process, whatever the in-flight budgets would allow. With an agent answering at once, the
//! in-flight budgets alone let a backlog drain as fast as the database and the CPU can send it,
//! and live traffic on the same machine pays for it (10,000 due at 8 in flight per tenant: ~530
//! redeliveries/s, live acknowledgements 0.81×; docs/benchmarks.md).

use std::time::Duration;

use std::time::Instant;

/// A token bucket refilled at `per_second`, holding at most one second's worth (or `batch`,
/// if larger, so a batch can always gather).
#[derive(Debug)]
pub(super) struct Pace {
    per_second: f64,
    capacity: f64,
    tokens: f64,
    at: Instant,
}

impl Pace {
    /// `None` when `per_second` is 0: no pace.
    pub(super) fn new(per_second: u32, batch: u32, now: Instant) -> Option<Self> {
        if per_second == 0 {
            return None;
        }
        let per_second = f64::from(per_second);
        let capacity = per_second.max(f64::from(batch.max(1)));
        // A process starts with a full bucket: the first second may start `capacity`.
        Some(Self { per_second, capacity, tokens: capacity, at: now })
    }

    fn refill(&mut self, now: Instant) {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + earned).min(self.capacity);
        self.at = self.at.max(now);
    }

    /// How many redeliveries may start now.
    pub(super) fn available(&mut self, now: Instant) -> u32 {
        self.refill(now);
        // Floored and bounded by the capacity, itself at most `u32::MAX` as an f64.
        self.tokens.floor() as u32
    }

    /// One redelivery started.
    pub(super) fn spend(&mut self) {
        self.tokens -= 1.0;
    }

    /// How long until `wanted` (at most the capacity) may start; zero when they may now.
    pub(super) fn wait_for(&mut self, wanted: u32, now: Instant) -> Duration {
        self.refill(now);
        let missing = f64::from(wanted).min(self.capacity) - self.tokens;
        if missing <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(missing / self.per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pace_when_zero() {
        assert!(Pace::new(0, 4, Instant::now()).is_none());
    }

    #[test]
    fn starts_full_and_refills_at_the_rate() {
        let start = Instant::now();
        let mut pace = Pace::new(10, 4, start).expect("a pace");
        assert_eq!(pace.available(start), 10);
        for _ in 0..10 {
            pace.spend();
        }
        assert_eq!(pace.available(start), 0);
        assert_eq!(pace.wait_for(4, start), Duration::from_millis(400));
        let later = start + Duration::from_millis(250);
        assert_eq!(pace.available(later), 2);
        // Never more than a second's worth saved up.
        let much_later = later + Duration::from_secs(60);
        assert_eq!(pace.available(much_later), 10);
        assert_eq!(pace.wait_for(4, much_later), Duration::ZERO);
    }

    #[test]
    fn a_batch_can_gather_under_a_slow_pace() {
        let start = Instant::now();
        let mut pace = Pace::new(2, 4, start).expect("a pace");
        assert_eq!(pace.available(start), 4);
        for _ in 0..4 {
            pace.spend();
        }
        assert_eq!(pace.wait_for(4, start), Duration::from_secs(2));
        // More than the capacity is never waited for.
        assert_eq!(pace.wait_for(100, start), Duration::from_secs(2));
    }
}

//! Log lines that would repeat once per answer, summarised: at most one line per key a second,
//! each with how many happened since the last.
//!
//! A process at its in-flight bound answers thousands of 503s a second; one WARN line each
//! made overload cost a log pipeline as much as the answers themselves (47,490 lines in 8 s,
//! issue 24). The metrics count every answer; the log says that it is happening, how often,
//! and why, once a second. The first occurrence after a quiet second is logged at once, so a
//! single refusal is never delayed; what happens within the second after it is logged by the
//! next occurrence after the second is up, or by [`LogSummary::flush_due`], which the server
//! calls every second, so a burst that stops is still reported in full.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// At most one line per key in this time.
pub const EVERY: Duration = Duration::from_secs(1);

/// What a summary line says: the key's word and how many since the last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub key: &'static str,
    pub count: u64,
    /// Since the previous line for this key (or since start).
    pub over: Duration,
}

/// One key's tally.
#[derive(Debug)]
struct Tally {
    key: &'static str,
    /// Occurrences not logged yet.
    pending: AtomicU64,
    /// When the last line was written; `None` before the first.
    last: Mutex<Option<Instant>>,
}

/// A fixed set of keys, each summarised on its own.
#[derive(Debug)]
pub struct LogSummary {
    tallies: Vec<Tally>,
    started: Instant,
}

impl LogSummary {
    pub fn new(keys: &[&'static str]) -> Self {
        let tallies = keys
            .iter()
            .map(|&key| Tally { key, pending: AtomicU64::new(0), last: Mutex::new(None) })
            .collect();
        Self { tallies, started: Instant::now() }
    }

    /// Counts one occurrence of `key` at `now`; returns the summary to log, if a line is due.
    /// An unknown key is never summarised (the caller logs it as it is).
    pub fn record(&self, key: &'static str, now: Instant) -> Option<Summary> {
        let tally = self.tallies.iter().find(|t| t.key == key)?;
        tally.pending.fetch_add(1, Ordering::Relaxed);
        self.due(tally, now)
    }

    /// The summaries due at `now` for keys with occurrences not yet logged.
    pub fn flush_due(&self, now: Instant) -> Vec<Summary> {
        self.tallies
            .iter()
            .filter(|t| t.pending.load(Ordering::Relaxed) > 0)
            .filter_map(|t| self.due(t, now))
            .collect()
    }

    fn due(&self, tally: &Tally, now: Instant) -> Option<Summary> {
        let mut last = tally.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if last.is_some_and(|at| now.saturating_duration_since(at) < EVERY) {
            return None;
        }
        let count = tally.pending.swap(0, Ordering::Relaxed);
        if count == 0 {
            return None;
        }
        let over = now.saturating_duration_since(last.unwrap_or(self.started));
        *last = Some(now);
        Some(Summary { key: tally.key, count, over })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_occurrence_is_logged_at_once_and_the_rest_of_its_second_once() {
        let summary = LogSummary::new(&["busy", "paused"]);
        let t0 = Instant::now();
        let first = summary.record("busy", t0).expect("logged at once");
        assert_eq!((first.key, first.count), ("busy", 1));
        // 999 more within the next 0.9 s: no line until the second is up.
        for i in 1..1_000u64 {
            assert_eq!(summary.record("busy", t0 + Duration::from_micros(i * 900)), None);
        }
        assert!(summary.flush_due(t0 + Duration::from_millis(990)).is_empty(), "not before the second");
        let rest = summary.flush_due(t0 + Duration::from_millis(1_000));
        assert_eq!(rest, [Summary { key: "busy", count: 999, over: Duration::from_secs(1) }]);
    }

    #[test]
    fn every_occurrence_is_counted_in_some_line_and_keys_are_apart() {
        let summary = LogSummary::new(&["busy", "paused"]);
        let t0 = Instant::now();
        let mut logged = Vec::new();
        for i in 0..1_000u64 {
            let at = t0 + Duration::from_micros(i * 500); // 1,000 in half a second
            logged.extend(summary.record("busy", at));
            if i % 10 == 0 {
                logged.extend(summary.record("paused", at));
            }
        }
        logged.extend(summary.flush_due(t0 + Duration::from_secs(2)));
        let count = |key| logged.iter().filter(|s| s.key == key).map(|s| s.count).sum::<u64>();
        assert_eq!(count("busy"), 1_000, "nothing is lost from the count: {logged:?}");
        assert_eq!(count("paused"), 100);
        assert!(logged.len() <= 4, "at most two lines per key: {logged:?}");
        assert!(summary.flush_due(t0 + Duration::from_secs(5)).is_empty(), "nothing left to say");
    }

    #[test]
    fn a_summary_says_how_long_it_covers_and_an_unknown_key_is_not_summarised() {
        let summary = LogSummary::new(&["busy"]);
        let t0 = Instant::now();
        summary.record("busy", t0);
        summary.record("busy", t0 + Duration::from_millis(200));
        let line = summary.record("busy", t0 + Duration::from_millis(1_500)).expect("a second is up");
        assert_eq!((line.count, line.over), (2, Duration::from_millis(1_500)));
        assert_eq!(summary.record("other", t0), None);
    }
}

//! Activity (issue 42): each tenant's dispatches by hour, as the serving processes count them
//! when they end (not read from the receipts), for charts and for the overview of the tenants
//! in trouble now.

use chrono::{DateTime, Duration, DurationRound, Utc};

use super::TenantId;

/// One tenant's hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityHour {
    /// The hour's start (UTC).
    pub hour: DateTime<Utc>,
    /// Dispatches the agent took.
    pub delivered: u64,
    /// Dispatches that failed.
    pub failed: u64,
    /// The dispatches' time, summed, in milliseconds.
    pub dispatch_ms: u64,
    /// The longest dispatch, in milliseconds.
    pub dispatch_ms_max: u32,
}

impl ActivityHour {
    /// An hour with nothing in it.
    pub fn empty(hour: DateTime<Utc>) -> Self {
        Self { hour, delivered: 0, failed: 0, dispatch_ms: 0, dispatch_ms_max: 0 }
    }

    /// Every dispatch of the hour.
    pub fn dispatches(&self) -> u64 {
        self.delivered + self.failed
    }

    /// The mean dispatch time, when there was one.
    pub fn mean_ms(&self) -> Option<u64> {
        self.dispatch_ms.checked_div(self.dispatches())
    }
}

/// The start of the hour `at` is in.
pub fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::hours(1)).unwrap_or(at)
}

/// A tenant's activity over a window: one entry per hour, oldest first, the hours without any
/// filled with zeros (a chart's bars are its hours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub hours: Vec<ActivityHour>,
}

impl Activity {
    /// The `count` hours up to and including the one `now` is in, from what was found (hours
    /// outside the window are left out).
    pub fn over(now: DateTime<Utc>, count: u32, found: &[ActivityHour]) -> Self {
        let last = hour_of(now);
        let hours = (0..i64::from(count))
            .rev()
            .map(|back| {
                let hour = last - Duration::hours(back);
                found.iter().find(|h| h.hour == hour).copied().unwrap_or_else(|| ActivityHour::empty(hour))
            })
            .collect();
        Self { hours }
    }

    /// Its hours summed: dispatches taken and failed, and the mean and longest dispatch time.
    pub fn total(&self) -> ActivityHour {
        let first = self.hours.first().map_or(DateTime::<Utc>::MIN_UTC, |h| h.hour);
        self.hours.iter().fold(ActivityHour::empty(first), |sum, h| ActivityHour {
            hour: sum.hour,
            delivered: sum.delivered + h.delivered,
            failed: sum.failed + h.failed,
            dispatch_ms: sum.dispatch_ms + h.dispatch_ms,
            dispatch_ms_max: sum.dispatch_ms_max.max(h.dispatch_ms_max),
        })
    }
}

/// A tenant among those failing most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingTenant {
    pub tenant: TenantId,
    pub name: String,
    pub failed: u64,
    pub delivered: u64,
}

/// A tenant among those with the most stranded events now: acknowledged to Slack, claimed
/// before the stranded threshold, never handled, no failure recorded, as the serving
/// processes' sweep last marked them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrandedTenant {
    pub tenant: TenantId,
    pub name: String,
    pub stranded: u64,
}

/// A tenant whose agent is failing now (a process opened its circuit) or was disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TroubledAgent {
    pub tenant: TenantId,
    pub name: String,
    pub failing_since: Option<DateTime<Utc>>,
    pub disabled_at: Option<DateTime<Utc>>,
}

/// Support's view of what is going wrong now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// Failures are counted from this hour on.
    pub since: DateTime<Utc>,
    pub failing_most: Vec<FailingTenant>,
    /// The tenants with the most stranded events now, most first.
    pub stranded_most: Vec<StrandedTenant>,
    pub agents: Vec<TroubledAgent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn a_window_has_every_hour_oldest_first_the_empty_ones_as_zeros() {
        let found = [
            ActivityHour {
                delivered: 5,
                failed: 1,
                dispatch_ms: 60,
                dispatch_ms_max: 30,
                ..ActivityHour::empty(at("2026-12-06T10:00:00Z"))
            },
            ActivityHour {
                delivered: 2,
                failed: 0,
                dispatch_ms: 10,
                dispatch_ms_max: 7,
                ..ActivityHour::empty(at("2026-12-06T12:00:00Z"))
            },
            ActivityHour { delivered: 9, ..ActivityHour::empty(at("2026-12-05T12:00:00Z")) },
        ];
        let window = Activity::over(at("2026-12-06T12:34:56Z"), 3, &found);
        let hours: Vec<_> = window.hours.iter().map(|h| (h.hour, h.delivered)).collect();
        assert_eq!(
            hours,
            [
                (at("2026-12-06T10:00:00Z"), 5),
                (at("2026-12-06T11:00:00Z"), 0),
                (at("2026-12-06T12:00:00Z"), 2)
            ],
            "three hours up to now's, the one outside the window left out"
        );
        let total = window.total();
        assert_eq!((total.delivered, total.failed, total.dispatch_ms_max), (7, 1, 30));
        assert_eq!(total.mean_ms(), Some(70 / 8));
        assert_eq!(ActivityHour::empty(at("2026-12-06T10:00:00Z")).mean_ms(), None, "no dispatch, no mean");
        assert_eq!(hour_of(at("2026-12-06T12:59:59.999Z")), at("2026-12-06T12:00:00Z"));
    }
}

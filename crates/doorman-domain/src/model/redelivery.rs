//! Redelivery, opt-in per tenant (ADR 26): the schedule on which an event that was not handled
//! is sent again, and one redelivery as the runner takes it.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{InboundEvent, ValidationError};

/// The delays before each redelivery of an event, each counted from the end of the attempt
/// before it (the live dispatch's, for the first). An event is sent at most `1 + len()` times:
/// its live dispatch, then one redelivery per delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedeliverySchedule(Vec<Duration>);

impl RedeliverySchedule {
    /// The most redeliveries a schedule may have.
    pub const MAX_STEPS: usize = 20;
    /// The longest one delay may be.
    pub const MAX_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

    /// The default, as webhook gateways space theirs (Svix's): after the live dispatch, 5 s,
    /// 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.
    pub fn standard() -> Self {
        Self([5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600].map(Duration::from_secs).to_vec())
    }

    /// From delays in whole seconds: 1 to 20 of them, each at most 24 hours.
    pub fn from_seconds(seconds: &[i64]) -> Result<Self, ValidationError> {
        if seconds.is_empty() {
            return Err(ValidationError::new("redelivery schedule", "has no delay"));
        }
        if seconds.len() > Self::MAX_STEPS {
            return Err(ValidationError::new("redelivery schedule", "has more than 20 delays"));
        }
        let max = Self::MAX_DELAY.as_secs() as i64;
        if seconds.iter().any(|&s| !(0..=max).contains(&s)) {
            return Err(ValidationError::new("redelivery schedule", "has a delay below 0 or above 24 hours"));
        }
        Ok(Self(seconds.iter().map(|&s| Duration::from_secs(s.unsigned_abs())).collect()))
    }

    /// From an operator's words: delays separated by commas, each a whole number followed by
    /// `s`, `m` or `h` (`5s,5m,30m,2h`), or `standard`.
    pub fn parse(words: &str) -> Result<Self, ValidationError> {
        let words = words.trim();
        if words == "standard" {
            return Ok(Self::standard());
        }
        let bad =
            || ValidationError::new("redelivery schedule", "must be delays like `5s,5m,30m,2h` (s, m or h)");
        let seconds = words
            .split(',')
            .map(|step| {
                let step = step.trim();
                let unit = step.chars().last().ok_or_else(bad)?;
                let scale = match unit {
                    's' => 1,
                    'm' => 60,
                    'h' => 3600,
                    _ => return Err(bad()),
                };
                let number = &step[..step.len() - 1];
                if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) || number.len() > 6 {
                    return Err(bad());
                }
                Ok(number.parse::<i64>().map_err(|_| bad())? * scale)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_seconds(&seconds)
    }

    /// The delays in whole seconds, as stored.
    pub fn seconds(&self) -> Vec<i64> {
        self.0.iter().map(|d| d.as_secs() as i64).collect()
    }

    /// How many redeliveries the schedule allows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The delay before redelivery `n` (1 for the first), if the schedule has one.
    pub fn delay(&self, n: u32) -> Option<Duration> {
        let index = usize::try_from(n).ok()?.checked_sub(1)?;
        self.0.get(index).copied()
    }
}

/// `5s,5m,30m,2h`: the operator's words [`RedeliverySchedule::parse`] reads back.
impl fmt::Display for RedeliverySchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, delay) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let s = delay.as_secs();
            match s {
                _ if s > 0 && s % 3600 == 0 => write!(f, "{}h", s / 3600)?,
                _ if s > 0 && s % 60 == 0 => write!(f, "{}m", s / 60)?,
                _ => write!(f, "{s}s")?,
            }
        }
        Ok(())
    }
}

/// A tenant whose events are redelivered, as the runner finds it: redelivery on, an agent set
/// and not paused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledTenant {
    pub tenant: super::TenantId,
    pub schedule: RedeliverySchedule,
    /// The tenant keeps payloads for an operator's replay: a spent schedule leaves the payload
    /// (else it is released).
    pub retains_payloads: bool,
}

/// An event taken for a redelivery: held for this sender until its outcome is recorded (or
/// the hold expires), and counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redelivery {
    /// The event as it was received, its `delivery.redelivery` saying which redelivery this is.
    pub event: InboundEvent,
    pub claimed_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_schedule_is_svixs_after_the_live_attempt() {
        let standard = RedeliverySchedule::standard();
        assert_eq!(standard.to_string(), "5s,5m,30m,2h,5h,10h,10h");
        assert_eq!(standard.len(), 7);
        assert_eq!(standard.delay(1), Some(Duration::from_secs(5)));
        assert_eq!(standard.delay(7), Some(Duration::from_secs(36_000)));
        assert_eq!(standard.delay(0), None);
        assert_eq!(standard.delay(8), None);
    }

    #[test]
    fn an_operators_words_read_back_as_written() {
        for words in ["5s,5m,30m,2h", "0s", "90s,24h", "standard"] {
            let schedule = RedeliverySchedule::parse(words).unwrap();
            let again = RedeliverySchedule::parse(&schedule.to_string()).unwrap();
            assert_eq!(schedule, again, "{words}");
        }
        assert_eq!(RedeliverySchedule::parse(" 1m , 2h ").unwrap().seconds(), [60, 7200]);
    }

    #[test]
    fn bad_schedules_are_refused_with_a_reason() {
        for words in ["", "5", "5x", "-5s", "s", "25h", "1.5h", "5s,,5s", "9999999s"] {
            assert!(RedeliverySchedule::parse(words).is_err(), "{words:?} was accepted");
        }
        assert!(RedeliverySchedule::from_seconds(&[]).is_err());
        assert!(RedeliverySchedule::from_seconds(&[86_401]).is_err());
        assert!(RedeliverySchedule::from_seconds(&[-1]).is_err());
        assert!(RedeliverySchedule::from_seconds(&[1; 21]).is_err());
        assert!(RedeliverySchedule::from_seconds(&[86_400; 20]).is_ok());
    }
}

//! The messaging platforms Doorman fronts.

use std::fmt;
use std::str::FromStr;

use super::ValidationError;

/// A messaging platform. Only Slack today; a second platform is a new variant plus its
/// adapter, and every `match` on this enum points at what the addition must cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    Slack,
}

impl Platform {
    /// The stable name stored in the database and sent to agents.
    pub const fn as_str(self) -> &'static str {
        match self {
            Platform::Slack => "slack",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "slack" => Ok(Platform::Slack),
            _ => Err(ValidationError::new("platform", "is not a known platform")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_name_round_trips() {
        assert_eq!("slack".parse::<Platform>().unwrap(), Platform::Slack);
        assert_eq!(Platform::Slack.to_string(), "slack");
        assert!("teams".parse::<Platform>().is_err());
    }
}

//! What a model constructor answers when a value from outside does not meet its invariant.

use thiserror::Error;

/// A value from outside did not meet a model invariant. Never quotes the value (it may be a
/// secret): only which field, and what is wrong, in words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{what} {problem}")]
pub struct ValidationError {
    /// The field, in words ("event id").
    pub what: &'static str,
    /// What is wrong with it, in words ("is empty").
    pub problem: &'static str,
}

impl ValidationError {
    pub const fn new(what: &'static str, problem: &'static str) -> Self {
        Self { what, problem }
    }
}

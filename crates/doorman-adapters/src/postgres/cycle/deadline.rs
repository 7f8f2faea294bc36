//! When a batch must be answered by, and until when a statement may still be sent.

use std::time::Duration;

use tokio::time::Instant;

/// When a batch must be answered by: the claims' time from when it is taken, or sooner, when
/// its first caller stops waiting sooner; and the last moment a statement may still be sent,
/// to be answered by then.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    pub(super) answer_by: Instant,
    pub(super) send_by: Instant,
}

impl Deadline {
    /// A batch taken now: answered within `confirm_within` (the claims' time), or by
    /// `answer_by` when its first caller stops waiting sooner.
    pub(super) fn for_batch(confirm_within: Duration, answer_by: Option<Instant>) -> Self {
        let within = Instant::now() + confirm_within;
        let answer_by = answer_by.map_or(within, |by| by.min(within));
        Self { answer_by, send_by: answer_by }
    }

    /// For a statement expected to take `statement`: sent only while its answer can come in
    /// time.
    pub(super) fn for_statements_of(self, statement: Duration) -> Self {
        Self { send_by: self.answer_by.checked_sub(statement).unwrap_or(self.answer_by), ..self }
    }
}

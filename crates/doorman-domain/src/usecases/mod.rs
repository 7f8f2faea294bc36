//! The two inbound use cases, split at the HTTP answer.
//!
//! 1. [`Inbound::acknowledge`] runs *before* the answer and decides it: resolve the
//!    workspace, check the bridge, and for a numbered event claim it (committed) — all
//!    inside the platform's 3-second deadline.
//! 2. [`Inbound::handle`] runs *after* the answer, in the background: dispatch the job and
//!    record what became of it.
//!
//! 3. [`Inbound::replay`] is an operator's: it sends kept events again through the same steps
//!    as a live delivery after its claim (see `replay.rs`).
//! 4. [`Inbound::take_redeliveries`] is the redelivery runner's, for tenants that opted in: it
//!    takes the events due to be sent again and makes them jobs for `handle` (`redeliver.rs`).
//!
//! The operator's actions (tenants, workspaces, agents, install links, installations, event
//! accounting, replays, keys, the audit trail) are [`operator::Operator`]'s: the command line
//! and the admin API are two faces of those use cases and only convert.
//!
//! Only the [`Decision`] of an accepted delivery carries a [`Job`](crate::Job), which nothing
//! outside this crate can build, and only `handle` dispatches, so the types say "no dispatch
//! without acknowledge". The unit tests pin the rest of the order: `mockall::Sequence` for the order
//! of calls, and futures that record when they *complete* for the order of effects.

mod acknowledge;
mod handle;
pub mod install;
pub mod operator;
mod redeliver;
mod replay;
#[cfg(test)]
mod tests;

pub use acknowledge::{Acknowledgement, Decision, Unavailability};
pub use handle::{Handled, NotSent};

use crate::model::Retention;

/// The inbound use cases over their five ports. The app crate fixes the concrete types
/// once, behind a type alias, so handlers never see these parameters.
#[derive(Debug)]
pub struct Inbound<D, B, R, I, C> {
    directory: D,
    bridge: B,
    receipts: R,
    installations: I,
    clock: C,
    retention: Retention,
}

impl<D, B, R, I, C> Inbound<D, B, R, I, C> {
    pub fn new(
        directory: D,
        bridge: B,
        receipts: R,
        installations: I,
        clock: C,
        retention: Retention,
    ) -> Self {
        Self { directory, bridge, receipts, installations, clock, retention }
    }

    pub fn bridge(&self) -> &B {
        &self.bridge
    }
}

//! The two inbound use cases, split at the HTTP answer.
//!
//! 1. [`Inbound::acknowledge`] runs *before* the answer and decides it: resolve the
//!    workspace, check the bridge, and for a numbered event claim it (committed) — all
//!    inside the platform's 3-second deadline.
//! 2. [`Inbound::handle`] runs *after* the answer, in the background: dispatch the job and
//!    record what became of it.
//!
//! Only an `Accepted` acknowledgement carries a [`Job`], and only `handle` dispatches, so
//! the type system already says "no dispatch without acknowledge"; the unit tests pin the
//! rest of the order with `mockall::Sequence`.

mod acknowledge;
mod handle;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};

pub use acknowledge::{Acknowledgement, Unavailability};
pub use handle::Handled;

use crate::model::{AgentEndpoint, InboundEvent, ReceiptKey, Retention, TenantId};

/// An accepted event on its way to an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub tenant: TenantId,
    pub agent: AgentEndpoint,
    pub event: InboundEvent,
    /// When Doorman accepted the delivery (sent to the agent as `received_at`).
    pub received_at: DateTime<Utc>,
}

impl Job {
    /// The receipt this job holds a claim on; `None` for unnumbered events, which are
    /// dispatched unclaimed.
    pub fn receipt_key(&self) -> Option<ReceiptKey> {
        self.event.external_id.clone().map(|external_id| ReceiptKey {
            tenant: self.tenant,
            platform: self.event.platform,
            external_id,
        })
    }
}

/// The inbound use cases over their four ports. The app crate fixes the concrete types
/// once, behind a type alias, so handlers never see these parameters.
#[derive(Debug)]
pub struct Inbound<D, B, R, C> {
    directory: D,
    bridge: B,
    receipts: R,
    clock: C,
    retention: Retention,
}

impl<D, B, R, C> Inbound<D, B, R, C> {
    pub fn new(directory: D, bridge: B, receipts: R, clock: C, retention: Retention) -> Self {
        Self { directory, bridge, receipts, clock, retention }
    }

    pub fn bridge(&self) -> &B {
        &self.bridge
    }

    pub fn receipts(&self) -> &R {
        &self.receipts
    }

    pub fn directory(&self) -> &D {
        &self.directory
    }
}

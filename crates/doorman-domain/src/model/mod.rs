//! The domain model. Every type with an invariant has a validating constructor, so a
//! value that exists is a value that is valid: adapters convert at the edge and the use
//! cases never re-check.

mod admission;
mod event;
mod installation;
mod job;
mod platform;
mod receipt;
mod replay;
mod tenant;
mod text;
mod workspace;

pub use admission::{Busy, Permit};
pub use event::{
    Delivery, EventKind, ExternalEventId, Fingerprint, InboundEvent, Label, Payload, RetryReason,
};
pub use installation::{
    Freshness, Grant, Installation, Lifecycle, LinkState, OpenedState, Recorded, SlackToken, StateRefusal,
    TakenState,
};
pub use job::Job;
pub use platform::Platform;
pub use receipt::{Claim, Completion, Failure, NewReceipt, Receipt, ReceiptKey, ReceiptStatus, Retention};
pub use replay::{ReplayCandidate, ReplayOutcome, ReplaySelection, Replayed, Taken};
pub use tenant::{Agent, AgentEndpoint, AgentSecret, AgentUrl, Tenant, TenantId, TenantName};
pub use workspace::{WorkspaceId, WorkspaceRef};

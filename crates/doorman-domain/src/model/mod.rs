//! The domain model. Every type with an invariant has a validating constructor, so a
//! value that exists is a value that is valid: adapters convert at the edge and the use
//! cases never re-check.

mod access;
mod activity;
mod admission;
mod answer;
mod audit;
mod directory;
mod event;
mod ids;
mod installation;
mod job;
mod kept_payload;
mod operational;
mod page;
mod platform;
mod receipt;
mod redelivery;
mod replay;
mod tenant;
mod text;
mod validation;
mod workspace;

pub use access::{
    Actor, ApiKey, Caller, KeyId, KeyName, KeyRefusal, KeyScope, KeySecret, KeySummary, RequestId,
};
pub use activity::{Activity, ActivityHour, FailingTenant, Overview, StrandedTenant, TroubledAgent, hour_of};
pub use admission::{Busy, Permit};
pub use answer::{AttemptRecord, Delivered, FailureKind, MAX_ANSWER_EXCERPT, answer_excerpt};
pub use audit::{AuditAction, AuditEntry, AuditFilter, AuditRecord};
pub use directory::{
    AgentSummary, Created, Idempotency, IdempotencyKey, InstallLink, InstallationSummary, Linked,
    LinkedWorkspace, NewTenant, Removed, TenantRecord, TenantSearch,
};
pub use event::{
    Delivery, EventKind, EventType, ExternalEventId, Fingerprint, InboundEvent, Label, Payload, RetryReason,
};
pub use installation::{
    Freshness, Grant, Installation, Lifecycle, LinkState, OpenedState, Recorded, SlackToken, StateRefusal,
    TakenState,
};
pub use job::Job;
pub use kept_payload::{KeptPayload, PayloadHidden, PayloadView};
pub use operational::{OperationalEvent, OperationalKind};
pub use page::{
    AuditCursor, Cursor, EventCursor, JobCursor, Page, PageLimit, PageRequest, TenantCursor, Total,
};
pub use platform::Platform;
pub use receipt::{
    Attempt, AttemptAnswer, Claim, ClaimId, Completion, EventFilter, EventMatch, EventReport, EventState,
    Failure, FirstDelivery, FoundReceipt, NewReceipt, Receipt, ReceiptKey, ReceiptRecord, ReceiptStatus,
    Retention,
};
pub use redelivery::{Redelivery, RedeliverySchedule, ScheduledTenant};
pub(crate) use replay::counted;
pub use replay::{
    JobEvent, JobState, MAX_REPLAY_EVENTS, NewReplayJob, ReplayAttempt, ReplayJob, ReplayJobId,
    ReplayOutcome, ReplayResult, ReplaySelection, ReplayTake, Replayed, SelectionRefused,
};
pub use tenant::{Agent, AgentEndpoint, AgentSecret, AgentUrl, Tenant, TenantId, TenantName};
pub use validation::ValidationError;
pub use workspace::{Scope, WorkspaceId, WorkspaceRef};

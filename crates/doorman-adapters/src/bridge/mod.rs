//! The agent bridge: hands accepted events to tenants' agents over HTTP.
//!
//! - [`document`]: the versioned JSON dispatch document (`docs/dispatch-contract.md`).
//! - [`signing`]: Standard Webhooks signatures, so any agent verifies with an off-the-shelf
//!   library.
//! - [`circuit`]: per-tenant circuit breaker; an open circuit makes deliveries answer 503 so
//!   Slack's own retries arrive once the agent is back.
//! - [`limits`]: bounded work in flight, per tenant and per process.
//! - [`destination`]: where dispatches may go (https, public addresses, after DNS).
//! - [`http`]: the `AgentBridge` port over HTTP, with the only retries allowed: those of a
//!   request that provably never reached the agent.
//! - [`client`]: the HTTP/1.1 client dispatches are sent with.
//! - [`request`]: a dispatch's method and headers, said once: what the client writes and what
//!   an event's page shows (the signature redacted).
//! - [`operational`]: the deployment's operational webhook (issue 41), signed and sent with
//!   the same pieces.

pub mod circuit;
pub mod client;
pub mod destination;
pub mod document;
pub mod http;
pub mod limits;
pub mod operational;
pub mod request;
pub mod signing;

pub use circuit::{CircuitBreaker, CircuitChange, CircuitSettings};
pub use destination::DestinationPolicy;
pub use http::{BridgeSettings, HttpAgentBridge};
pub use limits::{InFlightLimits, LimitSettings};
pub use operational::{OperationalWebhook, OperationalWebhookSettings, WebhookFailure};
pub use signing::WebhookKey;

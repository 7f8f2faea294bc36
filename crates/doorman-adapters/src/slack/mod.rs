//! Slack at the edge: is this request from Slack, and what is it?
//!
//! The order is fixed: [`verify`] the raw bytes first, then [`parse`] them. Nothing parses a
//! body whose signature has not been checked. Every failure is a typed [`Rejection`] the HTTP
//! layer maps to a status without matching on strings. The facts this relies on (signing,
//! envelopes, retries) are in `docs/slack-protocol.md` and the fixtures under
//! `tests/fixtures/slack/`. A kept body is [`shown`] to operators with Slack's verification
//! token redacted.

pub mod oauth;
mod parse;
mod rejection;
mod retry;
mod shown;
mod verify;

pub use parse::{Parsed, parse_command, parse_events, parse_interaction};
pub use rejection::{Rejection, SignatureProblem};
pub use retry::delivery_from_headers;
pub use shown::shown_payload;
pub use verify::{DEFAULT_WINDOW, SignatureHeaders, SigningSecret, Verified, Verifier};

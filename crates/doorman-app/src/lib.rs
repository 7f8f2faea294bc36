//! Doorman's service and operator commands, wired from the domain and the adapters. The crate
//! shows its faces, one folder each; no face uses another's modules (`just check-modules`), only
//! what they share, and a face starts another only through its front door (its `mod.rs`):
//!
//! - [`slack`]: the Slack-facing server, `doorman serve`: routes, handlers, the delivery
//!   runner, the receipts watch, its metrics and log summaries.
//! - [`operator`]: the operator's HTTP face, `doorman admin serve`: the admin API
//!   ([`operator::api`]) and the console ([`operator::console`]) side by side over what they
//!   share (state, problems, parameters, queries, the middleware, the replay-job runner).
//! - [`cli`]: the command line: what each command takes ([`cli::args`]) and does
//!   ([`cli::commands`]).
//!
//! Shared by the faces:
//!
//! - [`config`]: the settings both servers and the replays run with, validated once.
//! - [`documents`]: the JSON the operator's faces (the command line, the API, the console) show;
//!   [`event_detail`]: one event as all three read it (its request, its payload as allowed).
//! - [`replays`]: the live path after the claim, as the command line and the admin process
//!   replay events; [`outbound`]: the clients every dispatch sends with.
//! - [`process`]: what both servers do at start and stop; [`probes`]: their `/healthz` and
//!   `/readyz` answers; [`metrics_listener`]: the listener their `/metrics` answers on.
//! - [`telemetry`], the logs.

pub mod cli;
pub mod config;
pub mod documents;
pub mod event_detail;
pub mod metrics_listener;
pub mod operator;
pub mod outbound;
pub mod probes;
pub mod process;
pub mod replays;
pub mod slack;
pub mod telemetry;

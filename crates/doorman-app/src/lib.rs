//! Doorman's service and operator commands, wired from the domain and the adapters.
//!
//! - [`cli`] and [`config`]: flags, environment variables, validated settings.
//! - [`server`]: the actix-web server, its state, start-up and graceful shutdown.
//! - [`http`]: the handlers; they convert requests to domain values and outcomes to
//!   responses, and hold no business rule.
//! - [`runner`]: runs the use cases on the main runtime and tracks background dispatches
//!   so shutdown can drain them.
//! - [`metrics`], [`telemetry`], [`log_summary`]: Prometheus metrics and logs (repeated lines
//!   summarised once a second).
//! - [`watch`]: the once-a-minute count of stranded and failed receipts behind the gauges.
//! - [`commands`]: one module per subcommand; operator commands are the command line's face of
//!   the operator use cases.
//! - [`admin_api`]: `doorman admin serve`, the admin API: the same use cases' HTTP face.
//! - [`documents`]: the JSON both faces print.
//! - [`replays`]: the live path after the claim, as both faces replay events.

pub mod cli;
pub mod commands;
pub mod config;
pub mod documents;
pub mod metrics_listener;
pub mod operator;
pub mod outbound;
pub mod probes;
pub mod process;
pub mod replays;
pub mod slack;
pub mod telemetry;

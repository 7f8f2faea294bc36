//! The operator's HTTP face, `doorman admin serve`: the admin API ([`api`], for the platform's
//! backend, with a key) and the operator console ([`console`], for people, in a browser) side
//! by side over the same operator use cases, in one process logged in as a member of
//! `doorman_admin`. Neither face uses the other; what both need lives here, once:
//!
//! - [`server`]: start-up, serving both faces, running replay jobs ([`job_runner`]), shutdown;
//!   the rest of the crate starts it through [`start`] and [`run`].
//! - [`state`]: what every request reaches; [`observe`]: the middleware around every request;
//!   [`metrics`]: the process's metrics.
//! - [`problem`]: the one place operator errors become statuses (the API answers them as
//!   problem details, the console as pages); [`params`] and [`query`]: what a request names in
//!   its path, query or form, read one way for both. One event as both show it is the
//!   crate's [`event_detail`](crate::event_detail), which the command line shows too.

pub mod api;
pub mod console;
pub mod job_runner;
pub mod metrics;
pub mod observe;
pub mod params;
pub mod problem;
pub mod query;
pub mod server;
pub mod state;

pub use self::api::openapi_document;
pub use self::server::{RunningAdmin, run, start};

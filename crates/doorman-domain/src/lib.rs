//! Doorman's domain: the model, the ports and the use cases.
//!
//! Everything here is pure. The crate depends on no database, HTTP, crypto or runtime
//! crate (CI checks `cargo tree -p doorman-domain -e normal`), so the rule that matters
//! most — *claim before dispatch* — is exercised by fast unit tests against mockall mocks
//! of the ports, and a change that breaks the ordering fails a test immediately.
//!
//! - [`model`]: tenants, workspaces, inbound events, receipts; validating constructors.
//! - [`ports`]: what the use cases need from the outside world, with error contracts.
//! - [`usecases`]: `acknowledge` (before the HTTP answer) and `handle` (after it), the
//!   operator's replay and installs, and the operator actions both faces (CLI and admin API)
//!   share.

pub mod errors;
pub mod model;
pub mod ports;
pub mod usecases;

pub use errors::{DispatchError, OAuthError, OperatorError, RefreshError, StorageError, ValidationError};
pub use model::*;
pub use usecases::{Acknowledgement, Decision, Handled, Inbound, NotSent, Unavailability};

//! What every request of `doorman admin serve` reaches, the API's and the console's alike:
//! concrete types, chosen once at start-up ([`super::server`]).

use doorman_adapters::postgres::{PgAdminKeys, PgConsoleSessions, PgOperatorPorts, PgPool};
use doorman_domain::usecases::operator::Operator;

use super::metrics::AdminMetrics;
use crate::replays::Replays;

/// What every handler reaches: concrete types, chosen once.
#[derive(Debug)]
pub struct AdminState {
    pub operator: Operator<PgOperatorPorts>,
    pub keys: PgAdminKeys,
    pub replays: Replays,
    pub pool: PgPool,
    pub metrics: AdminMetrics,
    /// The operator console's sessions and sign-in links.
    pub sessions: PgConsoleSessions,
    /// Where browsers reach the console, and whom to believe about it.
    pub console: crate::config::ConsoleAddress,
}

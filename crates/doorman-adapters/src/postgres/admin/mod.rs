//! The operator actions' ports on PostgreSQL, one module per concern.
//!
//! Each adapter runs on a pool its face chose: the admin API's, whose connections act as
//! `doorman_admin` under row-level security, or the command line's, logged in as the tables'
//! owner. The code is the same for both: every transaction names the one tenant it acts for
//! ([`act_for`](super::pool::act_for): `SET LOCAL app.tenant_id`), and the two listings that
//! cross tenants (every tenant, every audit entry) say so
//! ([`across_tenants`](super::pool::across_tenants)), as does support's search by event id,
//! which then names the tenants it searches (`app.tenant_ids`, [`ledger`]). Every
//! change writes its audit entry in its own transaction ([`audit::write`]).

mod agents;
pub mod audit;
mod console;
mod installs;
mod jobs;
pub mod keys;
mod ledger;
mod tenants;
mod workspaces;

pub use agents::PgAgents;
pub use audit::PgAuditTrail;
pub use console::{PgConsoleSessions, SessionSecret};
pub use installs::PgInstallRecords;
pub use jobs::PgReplayJobs;
pub use keys::PgAdminKeys;
pub use ledger::{PgLedger, STRANDED_BY_TENANT};
pub use tenants::PgTenants;
pub(crate) use tenants::purge_deleted_tenant;
pub use workspaces::PgWorkspaces;

use std::sync::Arc;

use diesel::result::Error as DieselError;
use doorman_domain::StorageError;
use doorman_domain::ports::{OperatorPorts, SystemClock};

use super::errors::from_diesel;
use super::pool::PgPool;
use crate::bridge::DestinationPolicy;
use crate::secrets::Keyring;

/// Every operator port on one pool: what both faces build [`Operator`] from, each with its own
/// pool (the admin API's acts as `doorman_admin`; the command line's as the owner).
///
/// [`Operator`]: doorman_domain::usecases::operator::Operator
#[derive(Debug, Clone)]
pub struct PgOperatorPorts {
    tenants: PgTenants,
    workspaces: PgWorkspaces,
    agents: PgAgents,
    installs: PgInstallRecords,
    ledger: PgLedger,
    audit: PgAuditTrail,
    keys: PgAdminKeys,
    jobs: PgReplayJobs,
    destinations: DestinationPolicy,
    clock: SystemClock,
}

impl PgOperatorPorts {
    /// `keys` seal agents' secrets and open kept payloads (without them, setting an agent or
    /// reading a payload fails); `destinations` is the bridge's rule for agent URLs.
    pub fn new(pool: PgPool, keys: Option<Arc<Keyring>>, destinations: DestinationPolicy) -> Self {
        Self {
            tenants: PgTenants::new(pool.clone()),
            workspaces: PgWorkspaces::new(pool.clone()),
            agents: PgAgents::new(pool.clone(), keys.clone()),
            installs: PgInstallRecords::new(pool.clone()),
            ledger: PgLedger::new(pool.clone(), keys),
            audit: PgAuditTrail::new(pool.clone()),
            keys: PgAdminKeys::new(pool.clone()),
            jobs: PgReplayJobs::new(pool),
            destinations,
            clock: SystemClock,
        }
    }
}

impl OperatorPorts for PgOperatorPorts {
    type Tenants = PgTenants;
    type Workspaces = PgWorkspaces;
    type Agents = PgAgents;
    type Installs = PgInstallRecords;
    type Ledger = PgLedger;
    type Audit = PgAuditTrail;
    type Keys = PgAdminKeys;
    type Jobs = PgReplayJobs;
    type Destinations = DestinationPolicy;
    type Clock = SystemClock;

    fn tenants(&self) -> &PgTenants {
        &self.tenants
    }
    fn workspaces(&self) -> &PgWorkspaces {
        &self.workspaces
    }
    fn agents(&self) -> &PgAgents {
        &self.agents
    }
    fn installs(&self) -> &PgInstallRecords {
        &self.installs
    }
    fn ledger(&self) -> &PgLedger {
        &self.ledger
    }
    fn audit(&self) -> &PgAuditTrail {
        &self.audit
    }
    fn keys(&self) -> &PgAdminKeys {
        &self.keys
    }
    fn jobs(&self) -> &PgReplayJobs {
        &self.jobs
    }
    fn destinations(&self) -> &DestinationPolicy {
        &self.destinations
    }
    fn clock(&self) -> &SystemClock {
        &self.clock
    }
}

/// What a transaction of these adapters can stop with: the database's error, or an answer
/// that means "roll back" (an idempotent repeat, say).
pub(crate) enum Stop<T> {
    Database(DieselError),
    Answer(T),
}

impl<T> From<DieselError> for Stop<T> {
    fn from(error: DieselError) -> Self {
        Self::Database(error)
    }
}

impl<T> Stop<T> {
    /// The answer it carried, or the storage error.
    pub(crate) fn into_result(self) -> Result<T, StorageError> {
        match self {
            Stop::Answer(answer) => Ok(answer),
            Stop::Database(error) => Err(from_diesel(error)),
        }
    }
}

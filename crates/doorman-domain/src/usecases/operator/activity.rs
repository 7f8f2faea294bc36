//! Activity and the overview (issue 42): a tenant's dispatches by hour over a window, for its
//! charts, and what support sees going wrong across tenants now. Both read what the serving
//! processes counted as dispatches ended (`messaging_activity_hours`); the overview's stranded
//! events are a state, not an outcome, read from the receipts the sweep marked.

use chrono::Duration;

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{Activity, Caller, Overview, TenantId, hour_of};
use crate::ports::{Agents, Clock, Ledger, OperatorPorts};

/// How many tenants the overview names under each heading.
pub const OVERVIEW_ROWS: u32 = 10;

/// The overview counts failures over this many hours, this one included.
pub const OVERVIEW_HOURS: u32 = 24;

impl<P: OperatorPorts> Operator<P> {
    /// The tenant's last `hours` hours (the current one included), each one there, the empty
    /// ones as zeros. A tenant the caller does not see is unknown to it.
    pub async fn activity(
        &self,
        caller: &Caller,
        tenant: TenantId,
        hours: u32,
    ) -> Result<Activity, OperatorError> {
        self.visible(caller, tenant).await?;
        let now = self.ports.clock().now();
        let since = hour_of(now) - Duration::hours(i64::from(hours.max(1)) - 1);
        let found = self.ports.ledger().activity(tenant, since).await?;
        Ok(Activity::over(now, hours.max(1), &found))
    }

    /// The tenants failing most over the last day, those with the most stranded events now
    /// (as the last sweep marked them, by the same threshold as the stranded listing), and the
    /// agents failing or disabled now: for a caller that sees every tenant only (a customer's
    /// portal sees its own tenant's charts).
    pub async fn overview(&self, caller: &Caller) -> Result<Overview, OperatorError> {
        if caller.actor.only_tenant().is_some() {
            return Err(OperatorError::Forbidden(
                "the overview is across tenants: a key for every tenant reads it",
            ));
        }
        let since = hour_of(self.ports.clock().now()) - Duration::hours(i64::from(OVERVIEW_HOURS) - 1);
        let failing_most = self.ports.ledger().failing_most(since, OVERVIEW_ROWS).await?;
        let stranded_most = self.ports.ledger().stranded_most(self.stranded_before(), OVERVIEW_ROWS).await?;
        let agents = self.ports.agents().troubled(OVERVIEW_ROWS).await?;
        Ok(Overview { since, failing_most, stranded_most, agents })
    }
}

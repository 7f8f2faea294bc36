//! Since when a tenant's agent has been failing, as the serving processes' circuits tell it,
//! and the agents disabled for failing too long (issue 41).
//!
//! `failing_since` is written only when a circuit opens or closes (never per dispatch), under
//! the tenant's row-level security, the one column of an agent the server's role may write.
//! Disabling crosses tenants: `doorman_disable_failing_agents` (SECURITY DEFINER) pauses and
//! audits each agent in one statement.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::{StorageError, TenantId};

use super::errors::from_diesel;
use super::pool::{PgPool, act_for};
use super::schema::agent_bridges;

#[derive(Debug, Clone)]
pub struct PgAgentHealth {
    pool: PgPool,
}

#[derive(QueryableByName)]
struct Disabled {
    #[diesel(sql_type = SqlUuid)]
    tenant_id: uuid::Uuid,
    #[diesel(sql_type = Timestamptz)]
    failing_since: DateTime<Utc>,
}

impl PgAgentHealth {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The tenant's agent has been failing since `since` and was seen failing now (a circuit
    /// opened, or a probe failed); an earlier `since` already kept stays.
    pub async fn failing(&self, tenant: TenantId, since: DateTime<Utc>) -> Result<(), StorageError> {
        self.write(tenant, Some(since)).await
    }

    /// A dispatch to the tenant's agent succeeded (a circuit closed): it is failing no more.
    pub async fn recovered(&self, tenant: TenantId) -> Result<(), StorageError> {
        self.write(tenant, None).await
    }

    async fn write(&self, tenant: TenantId, since: Option<DateTime<Utc>>) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let written = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let of_tenant = agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid()));
                match since {
                    // The first failure counts: a later `since` keeps the one kept.
                    Some(since) => {
                        diesel::update(of_tenant)
                            .set((
                                agent_bridges::failing_since.eq(diesel::dsl::sql::<
                                    diesel::sql_types::Nullable<Timestamptz>,
                                >(
                                    "least(coalesce(failing_since, 'infinity'::timestamptz), ",
                                )
                                .bind::<Timestamptz, _>(since)
                                .sql(")")),
                                agent_bridges::failing_seen_at.eq(Some(Utc::now())),
                            ))
                            .execute(conn)
                            .await?
                    }
                    // Only where one is kept: a success with nothing to clear writes nothing (and
                    // announces no directory change).
                    None => {
                        diesel::update(of_tenant.filter(agent_bridges::failing_since.is_not_null()))
                            .set((
                                agent_bridges::failing_since.eq(None::<DateTime<Utc>>),
                                agent_bridges::failing_seen_at.eq(None::<DateTime<Utc>>),
                            ))
                            .execute(conn)
                            .await?
                    }
                };
                Ok(())
            })
            .await
            .map_err(from_diesel);
        unit.finish(written).await
    }

    /// Forgets the failures no process has seen since `seen_after` (its process died, or no
    /// delivery came), then pauses every agent failing since before `failing_before`, audited
    /// as Doorman's own `agent.disable`; the tenants disabled now, with since when their agent
    /// failed.
    pub async fn disable_failing(
        &self,
        failing_before: DateTime<Utc>,
        seen_after: DateTime<Utc>,
    ) -> Result<Vec<(TenantId, DateTime<Utc>)>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let disabled: Result<Vec<Disabled>, StorageError> =
            diesel::sql_query("SELECT tenant_id, failing_since FROM doorman_disable_failing_agents($1, $2)")
                .bind::<Timestamptz, _>(failing_before)
                .bind::<Timestamptz, _>(seen_after)
                .load(&mut *unit)
                .await
                .map_err(from_diesel);
        let disabled = unit.finish(disabled).await?;
        Ok(disabled.into_iter().map(|d| (TenantId::from_uuid(d.tenant_id), d.failing_since)).collect())
    }
}

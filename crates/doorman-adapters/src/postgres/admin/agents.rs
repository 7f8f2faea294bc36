//! Tenants' agents: the URL, the sealed signing secret, paused or not.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::Agents;
use doorman_domain::{
    AgentSecret, AgentSummary, AgentUrl, AuditEntry, StorageError, TenantId, TroubledAgent,
};

use super::audit;
use crate::postgres::directory::AGENT_SECRET_COLUMN;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, act_for, rows_across_tenants};
use crate::postgres::schema::agent_bridges;
use crate::secrets::{Keyring, SealedIn};

#[derive(Debug, Clone)]
pub struct PgAgents {
    pool: PgPool,
    keys: Option<Arc<Keyring>>,
}

impl PgAgents {
    /// `keys` seal the secrets it stores (the first key seals); without keys, setting an agent
    /// is refused rather than storing a secret in the clear.
    pub fn new(pool: PgPool, keys: Option<Arc<Keyring>>) -> Self {
        Self { pool, keys }
    }
}

/// An agent as stored: its URL, paused or not, since when it has been failing, when Doorman
/// disabled it.
type AgentRow = (String, bool, Option<chrono::DateTime<chrono::Utc>>, Option<chrono::DateTime<chrono::Utc>>);

impl Agents for PgAgents {
    /// One statement across tenants (as `doorman_admin`, in a transaction that says so).
    async fn troubled(&self, limit: u32) -> Result<Vec<TroubledAgent>, StorageError> {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Uuid)]
            tenant_id: uuid::Uuid,
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
            failing_since: Option<chrono::DateTime<chrono::Utc>>,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>)]
            disabled_at: Option<chrono::DateTime<chrono::Utc>>,
        }
        let query = diesel::sql_query(
            "SELECT b.tenant_id, t.name, b.failing_since, b.disabled_at \
               FROM agent_bridges AS b JOIN tenants AS t ON t.id = b.tenant_id \
              WHERE b.failing_since IS NOT NULL OR b.disabled_at IS NOT NULL \
              ORDER BY coalesce(b.failing_since, b.disabled_at), t.name, b.tenant_id LIMIT $1",
        )
        .into_boxed()
        .bind::<diesel::sql_types::BigInt, _>(i64::from(limit));
        let rows: Vec<Row> = rows_across_tenants(&self.pool, query).await?;
        Ok(rows
            .into_iter()
            .map(|row| TroubledAgent {
                tenant: TenantId::from_uuid(row.tenant_id),
                name: row.name,
                failing_since: row.failing_since,
                disabled_at: row.disabled_at,
            })
            .collect())
    }

    async fn get(&self, tenant: TenantId) -> Result<Option<AgentSummary>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = unit
            .transaction::<Option<AgentRow>, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                agent_bridges::table
                    .filter(agent_bridges::tenant_id.eq(tenant.as_uuid()))
                    .select((
                        agent_bridges::url,
                        agent_bridges::paused,
                        agent_bridges::failing_since,
                        agent_bridges::disabled_at,
                    ))
                    .first(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel);
        unit.finish(found)
            .await?
            .map(|(url, paused, failing_since, disabled_at)| {
                let url = AgentUrl::parse(&url)
                    .map_err(|e| StorageError::Unexpected(format!("the tenant's stored agent URL: {e}")))?;
                Ok(AgentSummary { url, paused, failing_since, disabled_at })
            })
            .transpose()
    }

    async fn set(
        &self,
        tenant: TenantId,
        url: &AgentUrl,
        secret: &AgentSecret,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        let keys = self.keys.as_ref().ok_or_else(|| {
            StorageError::Unexpected("no encryption keys are configured to seal the agent's secret".into())
        })?;
        let sealed =
            keys.seal(secret.expose_whsec().as_bytes(), SealedIn { tenant, column: AGENT_SECRET_COLUMN });
        let mut unit = self.pool.unit().await?;
        let written = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::insert_into(agent_bridges::table)
                    .values((
                        agent_bridges::tenant_id.eq(tenant.as_uuid()),
                        agent_bridges::url.eq(url.as_str()),
                        agent_bridges::signing_secret.eq(&sealed),
                    ))
                    .on_conflict(agent_bridges::tenant_id)
                    .do_update()
                    .set((
                        agent_bridges::url.eq(url.as_str()),
                        agent_bridges::signing_secret.eq(&sealed),
                        agent_bridges::updated_at.eq(diesel::dsl::now),
                    ))
                    .execute(conn)
                    .await?;
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(written).await
    }

    async fn set_paused(
        &self,
        tenant: TenantId,
        paused: bool,
        audit: &AuditEntry,
    ) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let paused = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let updated = diesel::update(
                    agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())),
                )
                .set((agent_bridges::paused.eq(paused), agent_bridges::updated_at.eq(diesel::dsl::now)))
                .execute(conn)
                .await?;
                if !paused {
                    // A resume undoes a disable, and the agent's failing starts afresh.
                    diesel::update(
                        agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())),
                    )
                    .set((
                        agent_bridges::disabled_at.eq(None::<chrono::DateTime<chrono::Utc>>),
                        agent_bridges::failing_since.eq(None::<chrono::DateTime<chrono::Utc>>),
                    ))
                    .execute(conn)
                    .await?;
                }
                if updated > 0 {
                    audit::write(conn, audit).await?;
                }
                Ok(updated > 0)
            })
            .await
            .map_err(from_diesel);
        unit.finish(paused).await
    }

    async fn remove(&self, tenant: TenantId, audit: &AuditEntry) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let removed = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let removed = diesel::delete(
                    agent_bridges::table.filter(agent_bridges::tenant_id.eq(tenant.as_uuid())),
                )
                .execute(conn)
                .await?;
                if removed > 0 {
                    audit::write(conn, audit).await?;
                }
                Ok(removed > 0)
            })
            .await
            .map_err(from_diesel);
        unit.finish(removed).await
    }
}

//! The tenant directory: workspace → tenant and its agent bridge.

use diesel::sql_types::{Bool, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use doorman_domain::ports::TenantDirectory;
use doorman_domain::{AgentEndpoint, AgentSecret, Platform, StorageError, Tenant, TenantId, WorkspaceRef};
use uuid::Uuid;

use super::errors::{from_diesel, from_pool};
use super::pool::PgPool;

/// Resolves workspaces in one round trip (`doorman_resolve`): the SECURITY DEFINER lookup,
/// then the tenant's bridge read under its own row-level-security policy — two indexed
/// reads, one statement.
#[derive(Debug, Clone)]
pub struct PgTenantDirectory {
    pool: PgPool,
}

impl PgTenantDirectory {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[derive(diesel::QueryableByName)]
struct Resolved {
    #[diesel(sql_type = SqlUuid)]
    tenant_id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    agent_url: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    agent_secret: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    agent_paused: Option<bool>,
}

impl TenantDirectory for PgTenantDirectory {
    async fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<Option<Tenant>, StorageError> {
        let mut conn = self.pool.get().await.map_err(from_pool)?;
        let found: Option<Resolved> = diesel::sql_query(
            "SELECT tenant_id, agent_url, agent_secret, agent_paused FROM doorman_resolve($1, $2, $3)",
        )
        .bind::<Text, _>(platform.as_str())
        .bind::<Nullable<Text>, _>(workspace.team_id().map(|id| id.as_str()))
        .bind::<Nullable<Text>, _>(workspace.enterprise_id().map(|id| id.as_str()))
        .get_results(&mut conn)
        .await
        .map_err(from_diesel)?
        .into_iter()
        .next();
        let Some(row) = found else { return Ok(None) };
        let tenant = TenantId::from_uuid(row.tenant_id);
        let agent = match (row.agent_url, row.agent_secret) {
            (Some(url), Some(secret)) => Some(AgentEndpoint {
                url,
                secret: AgentSecret::new(secret)
                    .map_err(|e| StorageError::Unexpected(format!("agent bridge of tenant {tenant}: {e}")))?,
                paused: row.agent_paused.unwrap_or(false),
            }),
            _ => None,
        };
        Ok(Some(Tenant { id: tenant, agent }))
    }
}

//! The tenant directory: workspace → tenant and its agent bridge.

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::TenantDirectory;
use doorman_domain::{AgentEndpoint, AgentSecret, Platform, StorageError, Tenant, TenantId, WorkspaceRef};
use uuid::Uuid;

use super::errors::{from_diesel, from_pool};
use super::pool::PgPool;
use super::schema::agent_bridges;
use super::tenant_scope::set_tenant;

/// Resolves workspaces in at most two indexed reads: the SECURITY DEFINER lookup, then the
/// tenant's bridge under its own row-level-security scope.
#[derive(Debug, Clone)]
pub struct PgTenantDirectory {
    pool: PgPool,
}

impl PgTenantDirectory {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

#[derive(QueryableByName)]
struct Resolved {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    tenant_id: Option<Uuid>,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = agent_bridges)]
struct BridgeRow {
    url: String,
    signing_secret: String,
    paused: bool,
}

impl TenantDirectory for PgTenantDirectory {
    async fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<Option<Tenant>, StorageError> {
        let mut conn = self.pool.get().await.map_err(from_pool)?;
        let resolved: Resolved =
            diesel::sql_query("SELECT doorman_resolve_workspace($1, $2, $3) AS tenant_id")
                .bind::<Text, _>(platform.as_str())
                .bind::<Nullable<Text>, _>(workspace.team_id().map(|id| id.as_str()))
                .bind::<Nullable<Text>, _>(workspace.enterprise_id().map(|id| id.as_str()))
                .get_result(&mut conn)
                .await
                .map_err(from_diesel)?;
        let Some(tenant_id) = resolved.tenant_id else { return Ok(None) };
        let tenant = TenantId::from_uuid(tenant_id);

        let bridge: Option<BridgeRow> = conn
            .transaction(async |conn| {
                set_tenant(conn, tenant).await?;
                agent_bridges::table
                    .filter(agent_bridges::tenant_id.eq(tenant_id))
                    .select(BridgeRow::as_select())
                    .first(conn)
                    .await
                    .optional()
            })
            .await
            .map_err(from_diesel)?;

        let agent = match bridge {
            None => None,
            Some(row) => Some(AgentEndpoint {
                url: row.url,
                secret: AgentSecret::new(row.signing_secret)
                    .map_err(|e| StorageError::Unexpected(format!("agent bridge of tenant {tenant}: {e}")))?,
                paused: row.paused,
            }),
        };
        Ok(Some(Tenant { id: tenant, agent }))
    }
}

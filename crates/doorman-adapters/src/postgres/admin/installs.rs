//! Install links (only their hash stored) and the installations they made (never a token).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::InstallRecords;
use doorman_domain::{AuditEntry, InstallationSummary, StorageError, TenantId, WorkspaceId, WorkspaceRef};
use uuid::Uuid;

use super::audit;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, act_for};
use crate::postgres::schema::{messaging_install_links, messaging_installations as installations};
use crate::secrets::{random_token, token_hash};

/// The most installations one listing returns.
const LISTING_LIMIT: i64 = 1000;

#[derive(Debug, Clone)]
pub struct PgInstallRecords {
    pool: PgPool,
}

impl PgInstallRecords {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

type Row = (
    Uuid,
    Option<String>,
    Option<String>,
    bool,
    String,
    String,
    String,
    bool,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
    DateTime<Utc>,
);

fn summary(row: Row) -> Result<InstallationSummary, StorageError> {
    let (
        tenant,
        team,
        enterprise,
        org_wide,
        app_id,
        bot_user_id,
        scopes,
        has_bot_token,
        expires,
        installed,
        updated,
    ) = row;
    let unreadable =
        |e: doorman_domain::ValidationError| StorageError::Unexpected(format!("stored installation: {e}"));
    let id = |raw: Option<String>| raw.map(WorkspaceId::new).transpose().map_err(unreadable);
    Ok(InstallationSummary {
        tenant: TenantId::from_uuid(tenant),
        workspace: WorkspaceRef::new(id(team)?, id(enterprise)?, org_wide).map_err(unreadable)?,
        app_id,
        bot_user_id,
        scopes,
        has_bot_token,
        token_expires_at: expires,
        installed_at: installed,
        updated_at: updated,
    })
}

impl InstallRecords for PgInstallRecords {
    async fn create_link(
        &self,
        tenant: TenantId,
        expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<String, StorageError> {
        let token = random_token();
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::insert_into(messaging_install_links::table)
                    .values((
                        messaging_install_links::token_hash.eq(token_hash(&token)),
                        messaging_install_links::tenant_id.eq(tenant.as_uuid()),
                        messaging_install_links::expires_at.eq(expires_at),
                    ))
                    .execute(conn)
                    .await?;
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await?;
        Ok(token)
    }

    /// Every tenant's (`None`) reads across tenants, which only the tables' owner can: as
    /// `doorman_admin` it finds none (the admin API always names a tenant).
    async fn list(&self, tenant: Option<TenantId>) -> Result<Vec<InstallationSummary>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let rows: Result<Vec<Row>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let mut query = installations::table.into_boxed();
                if let Some(tenant) = tenant {
                    act_for(conn, tenant).await?;
                    query = query.filter(installations::tenant_id.eq(*tenant.as_uuid()));
                }
                query
                    .order((installations::installed_at.asc(), installations::id.asc()))
                    .limit(LISTING_LIMIT)
                    .select((
                        installations::tenant_id,
                        installations::team_id,
                        installations::enterprise_id,
                        installations::is_enterprise_install,
                        installations::app_id,
                        installations::bot_user_id,
                        installations::scopes,
                        installations::bot_token.is_not_null(),
                        installations::token_expires_at,
                        installations::installed_at,
                        installations::updated_at,
                    ))
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        rows.into_iter().map(summary).collect()
    }
}

//! Workspace links: listed, linked (a workspace belongs to one tenant), removed with their
//! installation.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::ports::Workspaces;
use doorman_domain::{
    AuditEntry, Linked, LinkedWorkspace, Platform, Removed, StorageError, TenantId, WorkspaceId, WorkspaceRef,
};

use super::audit;
use crate::postgres::errors::from_diesel;
use crate::postgres::installations::remove_installation;
use crate::postgres::pool::{PgPool, act_for};
use crate::postgres::schema::messaging_workspaces as links;

#[derive(Debug, Clone)]
pub struct PgWorkspaces {
    pool: PgPool,
}

impl PgWorkspaces {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

type Row = (String, Option<String>, Option<String>, DateTime<Utc>);

/// A stored link read back: its ids went through the same constructors when it was written.
fn linked((platform, team, enterprise, linked_at): Row) -> Result<LinkedWorkspace, StorageError> {
    let unreadable =
        |e: doorman_domain::ValidationError| StorageError::Unexpected(format!("stored link: {e}"));
    let id = |raw: Option<String>| raw.map(WorkspaceId::new).transpose().map_err(unreadable);
    Ok(LinkedWorkspace {
        platform: platform.parse().map_err(unreadable)?,
        workspace: WorkspaceRef::operator(id(team)?, id(enterprise)?).map_err(unreadable)?,
        linked_at,
    })
}

/// The tenant's link of `workspace` (by its team, or an org-wide install by its enterprise),
/// as this transaction's tenant sees it.
async fn find(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    platform: Platform,
    workspace: &WorkspaceRef,
) -> Result<Option<Row>, diesel::result::Error> {
    let mut query = links::table
        .filter(links::tenant_id.eq(*tenant.as_uuid()))
        .filter(links::platform.eq(platform.as_str()))
        .into_boxed();
    query = match (workspace.team_id(), workspace.enterprise_id()) {
        (Some(team), _) => query.filter(links::team_id.eq(team.as_str().to_owned())),
        (None, enterprise) => query
            .filter(links::team_id.is_null())
            .filter(links::enterprise_id.eq(enterprise.map(|e| e.as_str().to_owned()).unwrap_or_default())),
    };
    query
        .select((links::platform, links::team_id, links::enterprise_id, links::created_at))
        .first(conn)
        .await
        .optional()
}

impl Workspaces for PgWorkspaces {
    async fn list(&self, tenant: TenantId) -> Result<Vec<LinkedWorkspace>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let rows: Result<Vec<Row>, StorageError> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                links::table
                    .filter(links::tenant_id.eq(*tenant.as_uuid()))
                    .order((links::created_at.asc(), links::id.asc()))
                    .select((links::platform, links::team_id, links::enterprise_id, links::created_at))
                    .load(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        rows.into_iter().map(linked).collect()
    }

    /// `ON CONFLICT DO NOTHING` against the two unique indexes (team; org-wide enterprise):
    /// whoever has the workspace, this transaction never waits long nor fails on it. A link
    /// the tenant cannot see afterwards is another tenant's.
    async fn link(
        &self,
        tenant: TenantId,
        platform: Platform,
        workspace: &WorkspaceRef,
        audit: &AuditEntry,
    ) -> Result<Linked, StorageError> {
        let mut unit = self.pool.unit().await?;
        let outcome: Result<(bool, Option<Row>), _> = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let inserted = diesel::insert_into(links::table)
                    .values((
                        links::tenant_id.eq(tenant.as_uuid()),
                        links::platform.eq(platform.as_str()),
                        links::team_id.eq(workspace.team_id().map(WorkspaceId::as_str)),
                        links::enterprise_id.eq(workspace.enterprise_id().map(WorkspaceId::as_str)),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                if inserted > 0 {
                    audit::write(conn, audit).await?;
                }
                Ok((inserted > 0, find(conn, tenant, platform, workspace).await?))
            })
            .await;
        match unit.finish(outcome.map_err(from_diesel)).await? {
            (true, Some(row)) => Ok(Linked::New(linked(row)?)),
            (false, Some(row)) => Ok(Linked::Already(linked(row)?)),
            (false, None) => Ok(Linked::Taken),
            (true, None) => Err(StorageError::Unexpected("a link just written does not read back".into())),
        }
    }

    async fn remove(
        &self,
        tenant: TenantId,
        _platform: Platform,
        workspace: &WorkspaceRef,
        audit: &AuditEntry,
    ) -> Result<Removed, StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let removed = remove_installation(conn, tenant, workspace).await?;
                if removed.link || removed.installation {
                    audit::write(conn, audit).await?;
                }
                Ok(removed)
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }
}

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

diesel::define_sql_function! {
    /// Whether a stored link (or installation) is the one a workspace key names
    /// (migration `one_rule_for_org_wide_links`: the one place that says it).
    fn doorman_link_named(
        row_team: diesel::sql_types::Nullable<diesel::sql_types::Text>,
        row_enterprise: diesel::sql_types::Nullable<diesel::sql_types::Text>,
        team: diesel::sql_types::Nullable<diesel::sql_types::Text>,
        enterprise: diesel::sql_types::Nullable<diesel::sql_types::Text>,
    ) -> diesel::sql_types::Nullable<diesel::sql_types::Bool>;
}

diesel::define_sql_function! {
    /// Whether a link would take deliveries another tenant's link receives (decision 20);
    /// holds the enterprise's (or team's) link lock until the transaction ends.
    fn doorman_link_taken(
        tenant: diesel::sql_types::Uuid,
        platform: diesel::sql_types::Text,
        team: diesel::sql_types::Nullable<diesel::sql_types::Text>,
        enterprise: diesel::sql_types::Nullable<diesel::sql_types::Text>,
    ) -> diesel::sql_types::Bool;
}

/// The tenant's link of `workspace`, as this transaction's tenant sees it.
async fn find(
    conn: &mut AsyncPgConnection,
    tenant: TenantId,
    platform: Platform,
    workspace: &WorkspaceRef,
) -> Result<Option<Row>, diesel::result::Error> {
    links::table
        .filter(links::tenant_id.eq(*tenant.as_uuid()))
        .filter(links::platform.eq(platform.as_str()))
        .filter(
            doorman_link_named(
                links::team_id,
                links::enterprise_id,
                workspace.team_id().map(|t| t.as_str().to_owned()),
                workspace.enterprise_id().map(|e| e.as_str().to_owned()),
            )
            .assume_not_null(),
        )
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

    /// First `doorman_link_taken` (decision 20: a link never takes deliveries another tenant's
    /// link receives), then `ON CONFLICT DO NOTHING` against the two unique indexes (team;
    /// org-wide enterprise). A link the tenant cannot see afterwards is another tenant's.
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
                let taken = diesel::select(doorman_link_taken(
                    tenant.as_uuid(),
                    platform.as_str(),
                    workspace.team_id().map(WorkspaceId::as_str),
                    workspace.enterprise_id().map(WorkspaceId::as_str),
                ))
                .get_result::<bool>(conn)
                .await?;
                if taken {
                    return Ok((false, None));
                }
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

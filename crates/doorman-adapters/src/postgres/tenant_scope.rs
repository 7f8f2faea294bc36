//! Naming the tenant for one transaction.

use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use doorman_domain::TenantId;

/// Sets `app.tenant_id` for the current transaction only (`is_local = true`). Called first
/// in every tenant-scoped transaction of the server; policies compare rows with it.
pub(crate) async fn set_tenant(conn: &mut AsyncPgConnection, tenant: TenantId) -> diesel::QueryResult<()> {
    diesel::sql_query("SELECT set_config('app.tenant_id', $1, true)")
        .bind::<Text, _>(tenant.to_string())
        .execute(conn)
        .await
        .map(drop)
}

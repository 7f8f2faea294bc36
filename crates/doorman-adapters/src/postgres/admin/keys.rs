//! Admin API keys: `dmk_<id>_<secret>`. The id (public, 32 hex digits) finds the row; only a
//! SHA-256 of the secret is stored, and the presented secret's hash is compared with it in
//! constant time. Nothing is cached: a revocation holds from the next request, in every
//! admin process.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::AdminKeys;
use doorman_domain::{
    ApiKey, AuditEntry, KeyId, KeyName, KeyScope, KeySecret, KeySummary, StorageError, TenantId,
};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::audit;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::PgPool;
use crate::postgres::schema::admin_keys;
use crate::secrets::{random_token, token_hash};

/// Every key starts with this, so a leaked one is recognisable (secret scanners, logs).
pub const PREFIX: &str = "dmk_";

/// A stored key: its hash, never its secret.
#[derive(Queryable, Selectable)]
#[diesel(table_name = admin_keys)]
struct KeyRow {
    id: Uuid,
    name: String,
    tenant_id: Option<Uuid>,
    read_only: bool,
    secret_hash: String,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
}

impl KeyRow {
    fn scope(&self) -> KeyScope {
        KeyScope { tenant: self.tenant_id.map(TenantId::from_uuid), read_only: self.read_only }
    }
}

#[derive(Debug, Clone)]
pub struct PgAdminKeys {
    pool: PgPool,
}

impl PgAdminKeys {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The key `presented` is, if it is one: a well-formed key whose id exists, is not revoked
    /// and whose secret matches. Anything else is `None`, alike.
    pub async fn authenticate(&self, presented: &str) -> Result<Option<ApiKey>, StorageError> {
        let Some((id, secret)) = split(presented) else { return Ok(None) };
        let mut unit = self.pool.unit().await?;
        let found = admin_keys::table
            .filter(admin_keys::id.eq(id.as_uuid()))
            .select(KeyRow::as_select())
            .first::<KeyRow>(&mut unit)
            .await
            .optional()
            .map_err(from_diesel);
        let found = unit.finish(found).await?;
        let Some(row) = found else { return Ok(None) };
        let matches: bool = token_hash(secret).as_bytes().ct_eq(row.secret_hash.as_bytes()).into();
        if !matches || row.revoked_at.is_some() {
            return Ok(None);
        }
        Ok(Some(ApiKey { id, scope: row.scope(), name: row.name }))
    }
}

/// `dmk_<32 hex>_<secret>` → the id and the secret.
fn split(presented: &str) -> Option<(KeyId, &str)> {
    let rest = presented.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    if id.len() != 32 || secret.is_empty() {
        return None;
    }
    Some((Uuid::try_parse(id).ok().map(KeyId::from_uuid)?, secret))
}

impl AdminKeys for PgAdminKeys {
    async fn create(
        &self,
        id: KeyId,
        name: &KeyName,
        scope: KeyScope,
        audit: &AuditEntry,
    ) -> Result<KeySecret, StorageError> {
        let secret = random_token();
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(admin_keys::table)
                    .values((
                        admin_keys::id.eq(id.as_uuid()),
                        admin_keys::name.eq(name.as_str()),
                        admin_keys::tenant_id.eq(scope.tenant.map(|t| *t.as_uuid())),
                        admin_keys::read_only.eq(scope.read_only),
                        admin_keys::secret_hash.eq(token_hash(&secret)),
                    ))
                    .execute(conn)
                    .await?;
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await?;
        Ok(KeySecret::new(format!("{PREFIX}{}_{secret}", id.as_uuid().simple())))
    }

    async fn list(&self) -> Result<Vec<KeySummary>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let rows = admin_keys::table
            .order((admin_keys::created_at.asc(), admin_keys::id.asc()))
            .select(KeyRow::as_select())
            .load::<KeyRow>(&mut unit)
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        Ok(rows
            .into_iter()
            .map(|row| KeySummary {
                id: KeyId::from_uuid(row.id),
                scope: row.scope(),
                name: row.name,
                created_at: row.created_at,
                revoked_at: row.revoked_at,
            })
            .collect())
    }

    async fn revoke(&self, id: KeyId, audit: &AuditEntry) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let revoked = diesel::update(
                    admin_keys::table
                        .filter(admin_keys::id.eq(id.as_uuid()))
                        .filter(admin_keys::revoked_at.is_null()),
                )
                .set(admin_keys::revoked_at.eq(diesel::dsl::now))
                .execute(conn)
                .await?;
                if revoked > 0 {
                    audit::write(conn, audit).await?;
                }
                Ok(revoked > 0)
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_splits_into_its_id_and_secret_and_nothing_else_does() {
        let id = KeyId::generate();
        let text = format!("dmk_{}_c2VjcmV0", id.as_uuid().simple());
        assert_eq!(split(&text), Some((id, "c2VjcmV0")));
        for bad in [
            "",
            "dmk_",
            "dmk_abc_def",
            &format!("xyz_{}_s", id.as_uuid().simple()),
            &format!("dmk_{}_", id.as_uuid().simple()),
        ] {
            assert_eq!(split(bad), None, "{bad}");
        }
    }
}

//! Admin API keys: `dmk_<id>_<secret>`. The id (public, 32 hex digits) finds the row; only a
//! SHA-256 of the secret is stored, and the presented secret's hash is compared with it in
//! constant time. Nothing is cached: a revocation (or an expiry) holds from the next request,
//! in every admin process. A key's use is recorded at most once a minute.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::AdminKeys;
use doorman_domain::{
    ApiKey, AuditEntry, KeyId, KeyName, KeyRefusal, KeyScope, KeySecret, KeySummary, StorageError, TenantId,
};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::audit;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, Unit, act_for};
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
    expires_at: Option<DateTime<Utc>>,
    last_used_at: Option<DateTime<Utc>>,
    read_payloads: bool,
}

impl KeyRow {
    fn scope(&self) -> KeyScope {
        KeyScope {
            tenant: self.tenant_id.map(TenantId::from_uuid),
            read_only: self.read_only,
            read_payloads: self.read_payloads,
        }
    }

    fn summary(self) -> KeySummary {
        KeySummary {
            id: KeyId::from_uuid(self.id),
            scope: self.scope(),
            name: self.name,
            created_at: self.created_at,
            expires_at: self.expires_at,
            last_used_at: self.last_used_at,
            revoked_at: self.revoked_at,
        }
    }
}

/// What a presented key turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    Valid(ApiKey),
    /// Refused, and why; with the key's id when it was well-formed (for the log line: the id
    /// is public, the secret never leaves here).
    Refused {
        reason: KeyRefusal,
        key: Option<KeyId>,
    },
}

/// A key's use is recorded when the last record is older than this.
const USE_RECORDED_EVERY: &str = "1 minute";

#[derive(Debug, Clone)]
pub struct PgAdminKeys {
    pool: PgPool,
}

impl PgAdminKeys {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The key `presented` is, if it is one: a well-formed key whose id exists, is neither
    /// revoked nor expired, and whose secret matches. A valid key's use is recorded (at most
    /// once a minute per key).
    pub async fn authenticate(&self, presented: &str) -> Result<Presented, StorageError> {
        let Some((id, secret)) = split(presented) else {
            return Ok(Presented::Refused { reason: KeyRefusal::Malformed, key: None });
        };
        let refused = |reason| Ok(Presented::Refused { reason, key: Some(id) });
        let mut unit = self.pool.unit().await?;
        let found = admin_keys::table
            .filter(admin_keys::id.eq(id.as_uuid()))
            .select((KeyRow::as_select(), diesel::dsl::sql::<diesel::sql_types::Timestamptz>("now()")))
            .first::<(KeyRow, DateTime<Utc>)>(&mut unit)
            .await
            .optional()
            .map_err(from_diesel);
        let found = match found {
            Ok(found) => found,
            Err(error) => return unit.finish(Err(error)).await,
        };
        let Some((row, now)) = found else { return unit.finish(refused(KeyRefusal::Unknown)).await };
        let matches: bool = token_hash(secret).as_bytes().ct_eq(row.secret_hash.as_bytes()).into();
        // The key's life is the domain's one rule, at the database's clock (as a console
        // session's and a sign-in link's key are checked).
        let reason = if matches {
            KeyRefusal::of_key(row.revoked_at, row.expires_at, now)
        } else {
            Some(KeyRefusal::WrongSecret)
        };
        if let Some(reason) = reason {
            return unit.finish(refused(reason)).await;
        }
        record_use(unit, id, row.last_used_at, now).await;
        Ok(Presented::Valid(ApiKey { id, scope: row.scope(), name: row.name }))
    }
}

/// Records that key `id` served a request (a bearer key's, or a console session's), when its
/// last record (`last_used_at`, as read at `now`) is a minute old or more; the statement
/// checks again, so several processes at once record it once. Ends `unit`. A failure is
/// logged: the request is still the key's, only the record of its use is missing.
pub(crate) async fn record_use(
    mut unit: Unit<'_>,
    id: KeyId,
    last_used_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) {
    let recorded = if last_used_at.is_none_or(|at| now - at >= chrono::Duration::minutes(1)) {
        diesel::sql_query(format!(
            "UPDATE admin_keys SET last_used_at = now() WHERE id = $1 \
              AND (last_used_at IS NULL OR last_used_at < now() - interval '{USE_RECORDED_EVERY}')"
        ))
        .bind::<diesel::sql_types::Uuid, _>(id.as_uuid())
        .execute(&mut unit)
        .await
        .map(drop)
        .map_err(from_diesel)
    } else {
        Ok(())
    };
    if let Err(error) = unit.finish(recorded).await {
        tracing::warn!(key.id = %id, error = %error, "could not record a key's use");
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
        expires_at: Option<DateTime<Utc>>,
        audit: &AuditEntry,
    ) -> Result<KeySecret, StorageError> {
        let secret = random_token();
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // The audit entry of a scoped key names its tenant: written acting for it.
                if let Some(tenant) = audit.tenant {
                    act_for(conn, tenant).await?;
                }
                diesel::insert_into(admin_keys::table)
                    .values((
                        admin_keys::id.eq(id.as_uuid()),
                        admin_keys::name.eq(name.as_str()),
                        admin_keys::tenant_id.eq(scope.tenant.map(|t| *t.as_uuid())),
                        admin_keys::read_only.eq(scope.read_only),
                        admin_keys::read_payloads.eq(scope.read_payloads),
                        admin_keys::secret_hash.eq(token_hash(&secret)),
                        admin_keys::expires_at.eq(expires_at),
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
        Ok(rows.into_iter().map(KeyRow::summary).collect())
    }

    async fn get(&self, id: KeyId) -> Result<Option<KeySummary>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let row = admin_keys::table
            .filter(admin_keys::id.eq(id.as_uuid()))
            .select(KeyRow::as_select())
            .first::<KeyRow>(&mut unit)
            .await
            .optional()
            .map_err(from_diesel);
        Ok(unit.finish(row).await?.map(KeyRow::summary))
    }

    async fn revoke(&self, id: KeyId, audit: &AuditEntry) -> Result<bool, StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // The audit entry of a scoped key names its tenant: written acting for it.
                if let Some(tenant) = audit.tenant {
                    act_for(conn, tenant).await?;
                }
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

    async fn sign_in_link(
        &self,
        id: KeyId,
        expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<Option<KeySecret>, StorageError> {
        let token = random_token();
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                if let Some(tenant) = audit.tenant {
                    act_for(conn, tenant).await?;
                }
                // Only for a key that exists and is not revoked. One revoked just after is
                // harmless: a link and a session are checked against their key at each use.
                let made = diesel::sql_query(
                    "INSERT INTO console_sign_in_links (token_hash, key_id, expires_at) \
                     SELECT $1, id, $3 FROM admin_keys WHERE id = $2 AND revoked_at IS NULL",
                )
                .bind::<diesel::sql_types::Text, _>(token_hash(&token))
                .bind::<diesel::sql_types::Uuid, _>(id.as_uuid())
                .bind::<diesel::sql_types::Timestamptz, _>(expires_at)
                .execute(conn)
                .await?;
                if made > 0 {
                    audit::write(conn, audit).await?;
                }
                Ok(made > 0)
            })
            .await
            .map_err(from_diesel);
        Ok(unit.finish(done).await?.then(|| KeySecret::new(token)))
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

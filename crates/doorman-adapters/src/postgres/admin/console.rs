//! The operator console's sessions: a browser holds an opaque random value in a cookie; only
//! its SHA-256 is stored. A session acts as the key it was opened with and is checked against
//! that key on every request (nothing cached), so revoking or expiring the key ends it at
//! once, in every admin process. One-time sign-in links (made by the `sign_in_link` port) are
//! spent here.
//!
//! Whether the key still authenticates is not written here in SQL: each statement reads the
//! key's `revoked_at` and `expires_at` with the database's `now()`, and the domain's one rule
//! ([`KeyRefusal::of_key`]) decides, as it does for a bearer key ([`super::keys`]).

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::{ApiKey, KeyId, KeyRefusal, KeyScope, StorageError, TenantId};
use uuid::Uuid;

use super::keys::record_use;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::PgPool;
use crate::secrets::{random_token, token_hash};

/// A session's cookie value: shown to the browser once, never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionSecret(String);

impl SessionSecret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SessionSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSecret(<redacted>)")
    }
}

/// The key a live session acts as.
#[derive(QueryableByName)]
struct SessionKey {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    tenant_id: Option<Uuid>,
    #[diesel(sql_type = Bool)]
    read_only: bool,
    #[diesel(sql_type = Bool)]
    read_payloads: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_used_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    revoked_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Timestamptz)]
    now: DateTime<Utc>,
}

impl SessionKey {
    /// Whether the session's key still authenticates, at the database's clock.
    fn authenticates(&self) -> bool {
        KeyRefusal::of_key(self.revoked_at, self.expires_at, self.now).is_none()
    }

    fn key(self) -> ApiKey {
        ApiKey {
            id: KeyId::from_uuid(self.id),
            name: self.name,
            scope: KeyScope {
                tenant: self.tenant_id.map(TenantId::from_uuid),
                read_only: self.read_only,
                read_payloads: self.read_payloads,
            },
        }
    }
}

/// A link just spent, and its key as it stands.
#[derive(QueryableByName)]
struct SpentLink {
    #[diesel(sql_type = SqlUuid)]
    key_id: Uuid,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    revoked_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    expires_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Timestamptz)]
    now: DateTime<Utc>,
}

impl SpentLink {
    /// Whether the link's key still authenticates, at the database's clock.
    fn authenticates(&self) -> bool {
        KeyRefusal::of_key(self.revoked_at, self.expires_at, self.now).is_none()
    }
}

#[derive(Debug, Clone)]
pub struct PgConsoleSessions {
    pool: PgPool,
}

impl PgConsoleSessions {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Opens a session acting as `key` until `expires_at`: the cookie's value.
    pub async fn open(&self, key: KeyId, expires_at: DateTime<Utc>) -> Result<SessionSecret, StorageError> {
        let secret = random_token();
        let mut unit = self.pool.unit().await?;
        let done = diesel::sql_query(
            "INSERT INTO console_sessions (id_hash, key_id, expires_at) VALUES ($1, $2, $3)",
        )
        .bind::<Text, _>(token_hash(&secret))
        .bind::<SqlUuid, _>(key.as_uuid())
        .bind::<Timestamptz, _>(expires_at)
        .execute(&mut unit)
        .await
        .map(drop)
        .map_err(from_diesel);
        unit.finish(done).await?;
        Ok(SessionSecret(secret))
    }

    /// The key the session with this cookie acts as, while it is open, unexpired, and its key
    /// still authenticates; `None` otherwise (a sign-in is due). The request is the key's use,
    /// recorded as a bearer key's is (at most once a minute), so a portal key's last use says
    /// when its customer last opened the console.
    pub async fn resolve(&self, cookie: &str) -> Result<Option<ApiKey>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = diesel::sql_query(
            "SELECT k.id, k.name, k.tenant_id, k.read_only, k.read_payloads, k.last_used_at, k.revoked_at, k.expires_at, \
                    now() AS now \
               FROM console_sessions s JOIN admin_keys k ON k.id = s.key_id \
              WHERE s.id_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()",
        )
        .bind::<Text, _>(token_hash(cookie))
        .get_result::<SessionKey>(&mut unit)
        .await
        .optional()
        .map_err(from_diesel);
        match found {
            Ok(Some(session)) if session.authenticates() => {
                let (last_used_at, now) = (session.last_used_at, session.now);
                let key = session.key();
                record_use(unit, key.id, last_used_at, now).await;
                Ok(Some(key))
            }
            // No open session, or its key no longer authenticates: a sign-in is due.
            other => unit.finish(other.map(|_| None)).await,
        }
    }

    /// Ends the session with this cookie (sign-out); nothing when there is none.
    pub async fn end(&self, cookie: &str) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = diesel::sql_query(
            "UPDATE console_sessions SET ended_at = now() WHERE id_hash = $1 AND ended_at IS NULL",
        )
        .bind::<Text, _>(token_hash(cookie))
        .execute(&mut unit)
        .await
        .map(drop)
        .map_err(from_diesel);
        unit.finish(done).await
    }

    /// Spends a sign-in link: the key it signs in as, if the link is unspent, unexpired and its
    /// key still authenticates. A link is spent once, even by two browsers at the same moment.
    pub async fn spend_link(&self, token: &str) -> Result<Option<KeyId>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let spent = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let link = diesel::sql_query(
                    "UPDATE console_sign_in_links l SET used_at = now() FROM admin_keys k \
                      WHERE l.token_hash = $1 AND l.used_at IS NULL AND l.expires_at > now() \
                        AND k.id = l.key_id \
                     RETURNING l.key_id, k.revoked_at, k.expires_at, now() AS now",
                )
                .bind::<Text, _>(token_hash(token))
                .get_result::<SpentLink>(conn)
                .await
                .optional()?;
                match link {
                    // A link whose key no longer authenticates signs nobody in, and is left
                    // unspent (the key's rule is decided here, not in the statement).
                    Some(link) if !link.authenticates() => Err(diesel::result::Error::RollbackTransaction),
                    link => Ok(link.map(|link| KeyId::from_uuid(link.key_id))),
                }
            })
            .await;
        let spent = match spent {
            Err(diesel::result::Error::RollbackTransaction) => Ok(None),
            other => other.map_err(from_diesel),
        };
        unit.finish(spent).await
    }
}

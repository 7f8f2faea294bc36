//! The tenant directory: workspace → tenant and its agent bridge.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use diesel::sql_types::{Bool, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use doorman_domain::ports::TenantDirectory;
use doorman_domain::{
    Agent, AgentEndpoint, AgentSecret, AgentUrl, Installation, Platform, SlackToken, StorageError, Tenant,
    TenantId, ValidationError, WorkspaceId, WorkspaceRef,
};
use uuid::Uuid;

use super::errors::from_diesel;
use super::pool::PgPool;
use crate::secrets::{Keyring, OpenError, SealedIn};

/// Resolves workspaces in one round trip (`doorman_resolve`): the SECURITY DEFINER lookup,
/// then the tenant's bridge read under its own row-level-security policy — two indexed
/// reads, one statement.
///
/// The stored agent URL and secret are converted here, with the same constructors the
/// operator's command uses; a row that does not convert resolves to `Agent::Unusable`, so
/// deliveries are refused before anything is claimed, and is logged once per tenant until it
/// converts again.
///
/// The secret is stored sealed (`crate::secrets`); it is opened here, for this tenant's row
/// only. A secret that does not open (its key is not configured, or it was copied from another
/// row) makes the agent unusable, like any other value that does not convert.
#[derive(Debug, Clone)]
pub struct PgTenantDirectory {
    pool: PgPool,
    keys: Arc<Keyring>,
    reported_unusable: Arc<Mutex<HashSet<TenantId>>>,
}

impl PgTenantDirectory {
    pub fn new(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self { pool, keys, reported_unusable: Arc::default() }
    }

    fn agent(&self, tenant: TenantId, row: StoredAgent) -> Agent {
        let (Some(url), Some(sealed)) = (row.url, row.secret) else { return Agent::NotSet };
        let converted: Result<AgentEndpoint, ValidationError> = (|| {
            let secret = self
                .keys
                .open(&sealed, SealedIn { tenant, column: AGENT_SECRET_COLUMN })
                .map_err(|problem| ValidationError::new("agent secret", unopenable(&problem)))?;
            let secret =
                String::from_utf8(secret).map_err(|_| ValidationError::new("agent secret", "is not text"))?;
            Ok(AgentEndpoint {
                url: AgentUrl::parse(&url)?,
                secret: AgentSecret::parse(&secret)?,
                paused: row.paused.unwrap_or(false),
            })
        })();
        let mut reported = self.reported_unusable.lock().unwrap_or_else(|p| p.into_inner());
        match converted {
            Ok(endpoint) => {
                reported.remove(&tenant);
                Agent::Ready(endpoint)
            }
            Err(problem) => {
                if reported.insert(tenant) {
                    tracing::error!(
                        tenant.id = %tenant,
                        problem = %problem,
                        "the tenant's stored agent settings are not valid: its deliveries are answered 503 until `doorman agent set` fixes them"
                    );
                }
                Agent::Unusable(problem)
            }
        }
    }
}

impl PgTenantDirectory {
    /// The workspace's installation, its bot token opened. One that does not read back is
    /// logged and left out: the event is still dispatched, without an authorization.
    fn installation(&self, tenant: TenantId, row: &Resolved) -> Option<Installation> {
        let bot_user_id = row.install_bot_user_id.clone()?;
        let read = || -> Result<Installation, String> {
            let id = |raw: &Option<String>| {
                raw.as_deref().map(WorkspaceId::new).transpose().map_err(|e| e.to_string())
            };
            let bot_token = match &row.install_bot_token {
                None => None,
                Some(sealed) => {
                    let opened = self
                        .keys
                        .open(sealed, SealedIn { tenant, column: BOT_TOKEN_COLUMN })
                        .map_err(|e| e.to_string())?;
                    let text =
                        String::from_utf8(opened).map_err(|_| "the bot token is not text".to_owned())?;
                    Some(SlackToken::new(text).map_err(|e| e.to_string())?)
                }
            };
            Ok(Installation {
                team_id: id(&row.install_team_id)?,
                enterprise_id: id(&row.install_enterprise_id)?,
                bot_user_id,
                bot_token,
                scopes: row.install_scopes.clone().unwrap_or_default(),
                expires_at: row.install_expires_at,
                refreshable: row.install_refreshable.unwrap_or(false),
            })
        };
        read().map_err(|problem| {
            tracing::error!(tenant.id = %tenant, problem = %problem, "the workspace's installation does not read back; dispatching without its token");
        })
        .ok()
    }
}

/// Where installations' bot and refresh tokens are sealed.
pub const BOT_TOKEN_COLUMN: &str = "messaging_installations.bot_token";
pub const REFRESH_TOKEN_COLUMN: &str = "messaging_installations.refresh_token";

/// Where kept event payloads are sealed.
pub const PAYLOAD_COLUMN: &str = "messaging_event_payloads.payload";

/// Where agents' signing secrets are sealed (the associated data of each value).
pub const AGENT_SECRET_COLUMN: &str = "agent_bridges.signing_secret";

fn unopenable(problem: &OpenError) -> &'static str {
    match problem {
        OpenError::NotSealed => "is stored unsealed (run `doorman secrets rotate`)",
        OpenError::UnknownKey(_) => "is sealed with a key that is not configured",
        OpenError::Corrupt => "does not open (altered, or copied from another row)",
    }
}

/// The agent columns of a resolved row, before conversion.
struct StoredAgent {
    url: Option<String>,
    secret: Option<String>,
    paused: Option<bool>,
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
    #[diesel(sql_type = Nullable<Text>)]
    install_team_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    install_enterprise_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    install_bot_user_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    install_bot_token: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    install_scopes: Option<String>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Timestamptz>)]
    install_expires_at: Option<chrono::DateTime<chrono::Utc>>,
    #[diesel(sql_type = Nullable<Bool>)]
    install_refreshable: Option<bool>,
    #[diesel(sql_type = Bool)]
    retain_payloads: bool,
}

impl TenantDirectory for PgTenantDirectory {
    async fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<Option<Tenant>, StorageError> {
        let mut unit = self.pool.unit().await?;
        // Which link the delivery goes to is `doorman_resolve_workspace`'s rule (decision 20),
        // given what the delivery says of its installation.
        let found = diesel::sql_query("SELECT * FROM doorman_resolve($1, $2, $3, $4)")
            .bind::<Text, _>(platform.as_str())
            .bind::<Nullable<Text>, _>(workspace.team_id().map(|id| id.as_str()))
            .bind::<Nullable<Text>, _>(workspace.enterprise_id().map(|id| id.as_str()))
            .bind::<Text, _>(workspace.scope().as_str())
            .get_results::<Resolved>(&mut unit)
            .await
            .map_err(from_diesel);
        let found = unit.finish(found).await?.into_iter().next();
        let Some(row) = found else { return Ok(None) };
        let tenant = TenantId::from_uuid(row.tenant_id);
        let installation = self.installation(tenant, &row);
        let stored = StoredAgent { url: row.agent_url, secret: row.agent_secret, paused: row.agent_paused };
        Ok(Some(Tenant {
            id: tenant,
            agent: self.agent(tenant, stored),
            installation,
            retain_payloads: row.retain_payloads,
        }))
    }
}

/// How many stored secrets are sealed with one key (`key_id` empty: not sealed at all).
#[derive(Debug, Clone, PartialEq, Eq, diesel::QueryableByName)]
pub struct KeyUse {
    #[diesel(sql_type = Text)]
    pub key_id: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub secrets: i64,
}

/// Which keys the stored secrets are sealed with, across tenants (`doorman_secret_key_ids`:
/// ids and counts only), so a starting server can refuse to run without one of them.
pub async fn sealed_key_ids(pool: &PgPool) -> Result<Vec<KeyUse>, StorageError> {
    let mut unit = pool.unit().await?;
    let uses = diesel::sql_query("SELECT key_id, secrets FROM doorman_secret_key_ids()")
        .load(&mut unit)
        .await
        .map_err(from_diesel);
    unit.finish(uses).await
}

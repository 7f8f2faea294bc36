//! Installations of the Slack app: the install flow's links and states
//! ([`PgInstallStore`], on the server's pool) and, after an event's answer, refreshing
//! rotating tokens and applying uninstalls and revocations ([`PgInstallations`]).
//!
//! Tokens are sealed (`crate::secrets`) before they are stored and opened only for their
//! tenant. Links, states and browser cookies are stored as hashes. What the server's role may
//! not do itself — look up a link or a state before a tenant is known, link a workspace,
//! remove a link — goes through the narrow SECURITY DEFINER functions of the `installations`
//! migration.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::OptionalExtension;
use diesel::sql_types::{Array, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, RunQueryDsl};
use doorman_domain::ports::{InstallStore, Installations};
use doorman_domain::{
    Freshness, Grant, Installation, Lifecycle, LinkState, OAuthError, OpenedState, Recorded, RefreshError,
    Removed, SlackToken, StateRefusal, StorageError, TakenState, TenantId, WorkspaceRef,
};
use uuid::Uuid;

use super::directory::{BOT_TOKEN_COLUMN, REFRESH_TOKEN_COLUMN};
use super::errors::from_diesel;
use super::pool::{PgPool, act_for};
use crate::secrets::{Keyring, SealedIn, random_token, token_hash};
use crate::slack::oauth::{Refreshed, SlackOAuthClient};

/// The most expired or consumed states of a tenant deleted whenever one of its installs starts.
const STATE_SWEEP: i64 = 100;

/// The install flow's storage, as the server sees it.
#[derive(Debug, Clone)]
pub struct PgInstallStore {
    pool: PgPool,
    keys: Arc<Keyring>,
}

impl PgInstallStore {
    pub fn new(pool: PgPool, keys: Arc<Keyring>) -> Self {
        Self { pool, keys }
    }
}

#[derive(diesel::QueryableByName)]
struct Link {
    #[diesel(sql_type = SqlUuid)]
    tenant_id: Uuid,
    #[diesel(sql_type = Bool)]
    expired: bool,
}

#[derive(diesel::QueryableByName)]
struct TakenRow {
    #[diesel(sql_type = Text)]
    outcome: String,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    tenant_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Text>)]
    tenant_name: Option<String>,
}

#[derive(diesel::QueryableByName)]
struct RecordedRow {
    #[diesel(sql_type = Text)]
    outcome: String,
}

impl InstallStore for PgInstallStore {
    async fn link(&self, token: &str) -> Result<LinkState, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = diesel::sql_query("SELECT tenant_id, expired FROM doorman_install_link($1)")
            .bind::<Text, _>(token_hash(token))
            .get_results::<Link>(&mut unit)
            .await
            .map_err(from_diesel);
        let found = unit.finish(found).await?.into_iter().next();
        Ok(match found {
            None => LinkState::Unknown,
            Some(Link { expired: true, .. }) => LinkState::Expired,
            Some(Link { tenant_id, .. }) => LinkState::Active(TenantId::from_uuid(tenant_id)),
        })
    }

    async fn open_state(
        &self,
        tenant: TenantId,
        expires_at: DateTime<Utc>,
    ) -> Result<OpenedState, StorageError> {
        let opened = OpenedState { state: random_token(), browser: random_token() };
        let (state_hash, browser_hash) = (token_hash(&opened.state), token_hash(&opened.browser));
        let mut unit = self.pool.unit().await?;
        let opened_now = unit.transaction::<_, diesel::result::Error, _>(async |conn| {
            act_for(conn, tenant).await?;
            // States expire and are deleted: the table does not grow with installs.
            diesel::sql_query(
                "DELETE FROM messaging_install_states WHERE state_hash IN ( \
                   SELECT state_hash FROM messaging_install_states \
                    WHERE tenant_id = $1 AND (expires_at <= now() OR consumed_at IS NOT NULL) LIMIT $2)",
            )
            .bind::<SqlUuid, _>(tenant.as_uuid())
            .bind::<diesel::sql_types::BigInt, _>(STATE_SWEEP)
            .execute(conn)
            .await?;
            diesel::sql_query(
                "INSERT INTO messaging_install_states (state_hash, tenant_id, browser_hash, expires_at) VALUES ($1, $2, $3, $4)",
            )
            .bind::<Text, _>(&state_hash)
            .bind::<SqlUuid, _>(tenant.as_uuid())
            .bind::<Text, _>(&browser_hash)
            .bind::<Timestamptz, _>(expires_at)
            .execute(conn)
            .await
            .map(drop)
        })
        .await
        .map_err(from_diesel);
        unit.finish(opened_now).await?;
        Ok(opened)
    }

    async fn take_state(&self, state: &str, browser: &str) -> Result<TakenState, StorageError> {
        let mut unit = self.pool.unit().await?;
        let taken = diesel::sql_query(
            "SELECT outcome, tenant_id, tenant_name FROM doorman_take_install_state($1, $2)",
        )
        .bind::<Text, _>(token_hash(state))
        .bind::<Text, _>(token_hash(browser))
        .get_result::<TakenRow>(&mut unit)
        .await
        .map_err(from_diesel);
        let taken = unit.finish(taken).await?;
        Ok(match (taken.outcome.as_str(), taken.tenant_id) {
            ("ok", Some(tenant)) => TakenState::Taken {
                tenant: TenantId::from_uuid(tenant),
                tenant_name: taken.tenant_name.unwrap_or_default(),
            },
            ("expired", _) => TakenState::Refused(StateRefusal::Expired),
            ("used", _) => TakenState::Refused(StateRefusal::Used),
            ("other_browser", _) => TakenState::Refused(StateRefusal::OtherBrowser),
            _ => TakenState::Refused(StateRefusal::Unknown),
        })
    }

    async fn record(&self, tenant: TenantId, grant: &Grant) -> Result<Recorded, StorageError> {
        let seal = |token: &SlackToken, column| {
            self.keys.seal(token.expose().as_bytes(), SealedIn { tenant, column })
        };
        let workspace = &grant.workspace;
        let mut unit = self.pool.unit().await?;
        let recorded = diesel::sql_query(
            "SELECT doorman_record_installation($1, 'slack', $2, $3, $4, $5, $6, $7, $8, $9, $10) AS outcome",
        )
        .bind::<SqlUuid, _>(tenant.as_uuid())
        .bind::<Nullable<Text>, _>(workspace.team_id().map(|t| t.as_str()))
        .bind::<Nullable<Text>, _>(workspace.enterprise_id().map(|e| e.as_str()))
        .bind::<Bool, _>(workspace.is_enterprise_install())
        .bind::<Text, _>(&grant.app_id)
        .bind::<Text, _>(&grant.bot_user_id)
        .bind::<Text, _>(seal(&grant.bot_token, BOT_TOKEN_COLUMN))
        .bind::<Text, _>(&grant.scopes)
        .bind::<Nullable<Text>, _>(grant.refresh_token.as_ref().map(|t| seal(t, REFRESH_TOKEN_COLUMN)))
        .bind::<Nullable<Timestamptz>, _>(grant.expires_at)
        .get_result::<RecordedRow>(&mut unit)
        .await
        .map_err(from_diesel);
        let RecordedRow { outcome } = unit.finish(recorded).await?;
        match outcome.as_str() {
            "installed" => Ok(Recorded::Installed),
            "updated" => Ok(Recorded::Updated),
            "taken" => Ok(Recorded::Taken),
            other => Err(StorageError::Unexpected(format!("doorman_record_installation answered {other:?}"))),
        }
    }
}

/// Refreshes and lifecycle events, after an event's answer (the background pool).
#[derive(Debug, Clone)]
pub struct PgInstallations {
    pool: PgPool,
    keys: Arc<Keyring>,
    /// Without a configured Slack app nothing can be refreshed.
    oauth: Option<SlackOAuthClient>,
}

impl PgInstallations {
    pub fn new(pool: PgPool, keys: Arc<Keyring>, oauth: Option<SlackOAuthClient>) -> Self {
        Self { pool, keys, oauth }
    }
}

/// The refresh token stored now.
#[derive(diesel::QueryableByName)]
struct StoredRefresh {
    #[diesel(sql_type = Nullable<Text>)]
    refresh_token: Option<String>,
}

/// The WHERE clause naming an installation by its workspace key ($2 team, $3 enterprise), as
/// `doorman_link_named` says a key names one.
const BY_KEY: &str =
    "tenant_id = $1 AND platform = 'slack' AND doorman_link_named(team_id, enterprise_id, $2, $3)";

/// How long a process may take to ask Slack for fresh tokens before another may ask instead:
/// the Slack client's own timeout (10 s) and a margin.
const REFRESH_LEASE: std::time::Duration = std::time::Duration::from_secs(15);

/// How often a caller waiting for another's refresh looks again.
const LEASE_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What the installation's row says about a refresh, read and acted on in one short
/// transaction.
enum Lease {
    /// The token is fresh (another caller refreshed it): nothing to ask.
    NotNeeded(Installation),
    /// This caller may ask Slack, with this (opened) refresh token, until `until`.
    Taken { refresh_token: SlackToken, until: DateTime<Utc>, current: Installation },
    /// Another caller is asking Slack right now.
    HeldByAnother,
}

#[derive(diesel::QueryableByName)]
struct LeasedTokens {
    #[diesel(sql_type = Nullable<Text>)]
    bot_token: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    refresh_token: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    token_expires_at: Option<DateTime<Utc>>,
    /// Whether another caller's lease is still running.
    #[diesel(sql_type = Bool)]
    leased: bool,
}

#[derive(diesel::QueryableByName)]
struct LeaseUntil {
    #[diesel(sql_type = Timestamptz)]
    until: DateTime<Utc>,
}

/// What stops a refresh's transaction: the database, or a refusal found in it.
enum Stop {
    Database(diesel::result::Error),
    Refused(RefreshError),
}

impl From<diesel::result::Error> for Stop {
    fn from(error: diesel::result::Error) -> Self {
        Self::Database(error)
    }
}

impl From<RefreshError> for Stop {
    fn from(error: RefreshError) -> Self {
        Self::Refused(error)
    }
}

impl Stop {
    fn into_refresh_error(self) -> RefreshError {
        match self {
            Self::Refused(error) => error,
            Self::Database(error) => RefreshError::Storage(from_diesel(error)),
        }
    }
}

impl PgInstallations {
    /// A stored token, opened; one that does not open, or opens to something that is not a
    /// token (not UTF-8, not printable), is Doorman's storage failing, not Slack. The error
    /// names the installation and the column, never what the token held.
    fn open(
        &self,
        tenant: TenantId,
        installation: &Installation,
        sealed: &str,
        column: &'static str,
    ) -> Result<SlackToken, RefreshError> {
        let unreadable = |problem: &str| {
            RefreshError::Storage(StorageError::Unexpected(format!(
                "the stored {column} of {} {problem}",
                named(installation)
            )))
        };
        let bytes = self
            .keys
            .open(sealed, SealedIn { tenant, column })
            .map_err(|e| unreadable(&format!("does not open: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| unreadable("is not UTF-8 text"))?;
        SlackToken::new(text).map_err(|_| unreadable("is not a valid token"))
    }

    /// Reads the installation under a brief row lock (no call outside the database is made
    /// while it is held) and, if its token needs refreshing and nobody is asking Slack, leases
    /// it for [`REFRESH_LEASE`].
    async fn take_lease(&self, tenant: TenantId, installation: &Installation) -> Result<Lease, RefreshError> {
        let (team, enterprise) = key_of(installation);
        let mut unit = self.pool.unit().await?;
        let taken = unit
            .transaction::<_, Stop, _>(async |conn| {
                act_for(conn, tenant).await?;
                let row: LeasedTokens = diesel::sql_query(format!(
                    "SELECT bot_token, refresh_token, token_expires_at, \
                            coalesce(refresh_leased_until > now(), false) AS leased \
                     FROM messaging_installations WHERE {BY_KEY} FOR UPDATE"
                ))
                .bind::<SqlUuid, _>(tenant.as_uuid())
                .bind::<Nullable<Text>, _>(team.as_deref())
                .bind::<Nullable<Text>, _>(enterprise.as_deref())
                .get_result(conn)
                .await?;
                let tokens = &row;
                let current = Installation {
                    bot_token: tokens.bot_token.as_deref().map(|t| self.open(tenant, installation, t, BOT_TOKEN_COLUMN)).transpose()?,
                    expires_at: tokens.token_expires_at,
                    refreshable: tokens.refresh_token.is_some(),
                    ..installation.clone()
                };
                match current.freshness(Utc::now()) {
                    Freshness::Fresh => return Ok(Lease::NotNeeded(current)),
                    Freshness::Expired => return Err(RefreshError::Slack(OAuthError::Refused("no_refresh_token".into())).into()),
                    Freshness::Refresh if row.leased => return Ok(Lease::HeldByAnother),
                    Freshness::Refresh => {}
                }
                let Some(sealed) = tokens.refresh_token.as_deref() else {
                    return Err(RefreshError::Slack(OAuthError::Refused("no_refresh_token".into())).into());
                };
                let refresh_token = self.open(tenant, installation, sealed, REFRESH_TOKEN_COLUMN)?;
                let lease: LeaseUntil = diesel::sql_query(format!(
                    "UPDATE messaging_installations SET refresh_leased_until = now() + make_interval(secs => $4) \
                     WHERE {BY_KEY} RETURNING refresh_leased_until AS until"
                ))
                .bind::<SqlUuid, _>(tenant.as_uuid())
                .bind::<Nullable<Text>, _>(team.as_deref())
                .bind::<Nullable<Text>, _>(enterprise.as_deref())
                .bind::<diesel::sql_types::Double, _>(REFRESH_LEASE.as_secs_f64())
                .get_result(conn)
                .await?;
                Ok(Lease::Taken { refresh_token, until: lease.until, current })
            })
            .await
            .map_err(Stop::into_refresh_error);
        unit.finish(taken).await
    }

    /// Keeps Slack's fresh tokens and ends the lease, if the lease is still this caller's and
    /// the refresh token it spent is still the stored one (a reinstall or a revocation
    /// meanwhile wins: `false`, and the caller reads again).
    async fn keep(
        &self,
        tenant: TenantId,
        installation: &Installation,
        lease: DateTime<Utc>,
        spent: &SlackToken,
        fresh: &Refreshed,
    ) -> Result<bool, RefreshError> {
        let (team, enterprise) = key_of(installation);
        let mut unit = self.pool.unit().await?;
        let kept = unit
            .transaction::<_, Stop, _>(async |conn| {
                act_for(conn, tenant).await?;
                let stored: Option<StoredRefresh> = diesel::sql_query(format!(
                    "SELECT refresh_token FROM messaging_installations \
                     WHERE {BY_KEY} AND refresh_leased_until = $4 FOR UPDATE"
                ))
                .bind::<SqlUuid, _>(tenant.as_uuid())
                .bind::<Nullable<Text>, _>(team.as_deref())
                .bind::<Nullable<Text>, _>(enterprise.as_deref())
                .bind::<Timestamptz, _>(lease)
                .get_result(conn)
                .await
                .optional()?;
                let still_ours = match stored.and_then(|t| t.refresh_token) {
                    // Compared opened: a re-seal under a new key changes the stored text only.
                    Some(sealed) => self.open(tenant, installation, &sealed, REFRESH_TOKEN_COLUMN)?.expose() == spent.expose(),
                    None => false,
                };
                if !still_ours {
                    return Ok(false);
                }
                let seal = |token: &SlackToken, column| self.keys.seal(token.expose().as_bytes(), SealedIn { tenant, column });
                diesel::sql_query(format!(
                    "UPDATE messaging_installations SET bot_token = $4, refresh_token = $5, token_expires_at = $6, \
                     refresh_leased_until = NULL, updated_at = now() WHERE {BY_KEY}"
                ))
                .bind::<SqlUuid, _>(tenant.as_uuid())
                .bind::<Nullable<Text>, _>(team.as_deref())
                .bind::<Nullable<Text>, _>(enterprise.as_deref())
                .bind::<Text, _>(seal(&fresh.bot_token, BOT_TOKEN_COLUMN))
                .bind::<Text, _>(seal(&fresh.refresh_token, REFRESH_TOKEN_COLUMN))
                .bind::<Timestamptz, _>(fresh.expires_at)
                .execute(conn)
                .await?;
                Ok(true)
            })
            .await
            .map_err(Stop::into_refresh_error);
        unit.finish(kept).await
    }

    /// Ends this caller's lease without new tokens (Slack refused or was not reached), so the
    /// next caller asks at once rather than after the lease. Best effort: an unended lease
    /// only delays the next refresh until it runs out.
    async fn end_lease(&self, tenant: TenantId, installation: &Installation, lease: DateTime<Utc>) {
        let (team, enterprise) = key_of(installation);
        let ended = async {
            let mut unit = self.pool.unit().await?;
            let done = unit
                .transaction::<_, diesel::result::Error, _>(async |conn| {
                    act_for(conn, tenant).await?;
                    diesel::sql_query(format!(
                        "UPDATE messaging_installations SET refresh_leased_until = NULL \
                         WHERE {BY_KEY} AND refresh_leased_until = $4"
                    ))
                    .bind::<SqlUuid, _>(tenant.as_uuid())
                    .bind::<Nullable<Text>, _>(team.as_deref())
                    .bind::<Nullable<Text>, _>(enterprise.as_deref())
                    .bind::<Timestamptz, _>(lease)
                    .execute(conn)
                    .await
                    .map(drop)
                })
                .await
                .map_err(from_diesel);
            unit.finish(done).await
        };
        if let Err(error) = ended.await {
            tracing::warn!(tenant.id = %tenant, error = %error, "could not end a token refresh's lease; the next refresh waits for it to run out");
        }
    }
}

/// The installation's workspace key, as [`BY_KEY`] binds it.
/// The installation in words, for an error: its team, its enterprise, or both.
fn named(installation: &Installation) -> String {
    match (&installation.team_id, &installation.enterprise_id) {
        (Some(team), Some(enterprise)) => {
            format!("the installation of team {} (enterprise {})", team.as_str(), enterprise.as_str())
        }
        (Some(team), None) => format!("the installation of team {}", team.as_str()),
        (None, Some(enterprise)) => {
            format!("the org-wide installation of enterprise {}", enterprise.as_str())
        }
        (None, None) => "an installation with neither team nor enterprise".to_owned(),
    }
}

fn key_of(installation: &Installation) -> (Option<String>, Option<String>) {
    (
        installation.team_id.as_ref().map(|t| t.as_str().to_owned()),
        installation.enterprise_id.as_ref().map(|e| e.as_str().to_owned()),
    )
}

impl Installations for PgInstallations {
    /// Under a lease on the installation, not a lock: the caller that takes it asks Slack with
    /// no row locked and no connection held; a second caller (another dispatch, another
    /// process) waits for the first's answer, then finds the token fresh and asks Slack
    /// nothing (a rotating refresh token is spent when used: asking twice would fail one).
    async fn refresh(
        &self,
        tenant: TenantId,
        installation: &Installation,
    ) -> Result<Installation, RefreshError> {
        let Some(oauth) = &self.oauth else { return Err(RefreshError::NotConfigured) };
        let waited_since = std::time::Instant::now();
        loop {
            match self.take_lease(tenant, installation).await? {
                Lease::NotNeeded(current) => return Ok(current),
                Lease::HeldByAnother if waited_since.elapsed() < REFRESH_LEASE + LEASE_POLL => {
                    tokio::time::sleep(LEASE_POLL).await;
                }
                Lease::HeldByAnother => {
                    return Err(RefreshError::Storage(StorageError::Unavailable(
                        "another process's token refresh did not finish".into(),
                    )));
                }
                Lease::Taken { refresh_token, until, current } => {
                    let fresh = match oauth.refresh(&refresh_token).await {
                        Ok(fresh) => fresh,
                        Err(error) => {
                            self.end_lease(tenant, installation, until).await;
                            return Err(error.into());
                        }
                    };
                    if self.keep(tenant, installation, until, &refresh_token, &fresh).await? {
                        let Refreshed { bot_token, expires_at, .. } = fresh;
                        return Ok(Installation {
                            bot_token: Some(bot_token),
                            expires_at: Some(expires_at),
                            refreshable: true,
                            ..current
                        });
                    }
                    // Reinstalled or revoked while Slack answered: what is stored now wins.
                }
            }
        }
    }

    async fn apply(
        &self,
        tenant: TenantId,
        workspace: &WorkspaceRef,
        lifecycle: &Lifecycle,
    ) -> Result<(), StorageError> {
        let team = workspace.team_id().map(|t| t.as_str());
        let enterprise = workspace.enterprise_id().map(|e| e.as_str());
        let mut unit = self.pool.unit().await?;
        let applied = match lifecycle {
            Lifecycle::Uninstalled => remove_installation(&mut unit, tenant, workspace).await.map(drop),
            Lifecycle::TokensRevoked { bot_user_ids } => {
                unit.transaction::<_, diesel::result::Error, _>(async |conn| {
                    act_for(conn, tenant).await?;
                    diesel::sql_query(format!(
                        "UPDATE messaging_installations SET bot_token = NULL, refresh_token = NULL, token_expires_at = NULL, \
                         updated_at = now() WHERE {BY_KEY} AND bot_user_id = ANY($4)"
                    ))
                    .bind::<SqlUuid, _>(tenant.as_uuid())
                    .bind::<Nullable<Text>, _>(team)
                    .bind::<Nullable<Text>, _>(enterprise)
                    .bind::<Array<Text>, _>(bot_user_ids)
                    .execute(conn)
                    .await
                    .map(drop)
                })
                .await
            }
        };
        unit.finish(applied.map_err(from_diesel)).await
    }
}

/// Removes `tenant`'s installation of `workspace` and the workspace's link
/// (`doorman_remove_installation`); what there was to remove. Shared by the `app_uninstalled`
/// event and the operator's unlink and uninstall.
pub(crate) async fn remove_installation(
    conn: &mut diesel_async::AsyncPgConnection,
    tenant: TenantId,
    workspace: &WorkspaceRef,
) -> Result<Removed, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = Bool)]
        link_removed: bool,
        #[diesel(sql_type = Bool)]
        installation_removed: bool,
    }
    let found: Found =
        diesel::sql_query("SELECT * FROM doorman_remove_installation($1, 'slack', $2, $3, $4)")
            .bind::<SqlUuid, _>(tenant.as_uuid())
            .bind::<Nullable<Text>, _>(workspace.team_id().map(|t| t.as_str()))
            .bind::<Nullable<Text>, _>(workspace.enterprise_id().map(|e| e.as_str()))
            .bind::<Bool, _>(workspace.is_enterprise_install())
            .get_result(conn)
            .await?;
    Ok(Removed { link: found.link_removed, installation: found.installation_removed })
}

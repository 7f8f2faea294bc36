//! Slack's OAuth v2 endpoint (`oauth.v2.access`): exchanging an install's code, and refreshing
//! a rotating bot token (`docs/slack-protocol.md`). The client id and secret go by HTTP Basic
//! authentication; errors never carry a token, a code or the secret.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use doorman_domain::ports::SlackOAuth;
use doorman_domain::{Grant, OAuthError, SlackToken, WorkspaceId, WorkspaceRef};
use serde::Deserialize;

use crate::outbound::HttpClientError;

/// The Slack app's OAuth settings.
#[derive(Clone)]
pub struct SlackApp {
    pub client_id: String,
    pub client_secret: String,
    /// `https://slack.com/api` (or a fake Slack's, in tests and staging).
    pub api_url: String,
    /// `{DOORMAN_PUBLIC_URL}/slack/oauth/callback`: sent to authorize and again to exchange.
    pub redirect_uri: String,
}

impl SlackApp {
    /// Where to send a browser to install the app: Slack's authorize page with the client id,
    /// the bot scopes, the state and the redirect URI.
    pub fn authorize_link(
        &self,
        authorize_url: &str,
        scopes: &str,
        state: &str,
    ) -> Result<String, url::ParseError> {
        let url = url::Url::parse_with_params(
            authorize_url,
            [
                ("client_id", self.client_id.as_str()),
                ("scope", scopes),
                ("state", state),
                ("redirect_uri", self.redirect_uri.as_str()),
            ],
        )?;
        Ok(url.into())
    }
}

impl fmt::Debug for SlackApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlackApp")
            .field("client_id", &self.client_id)
            .field("api_url", &self.api_url)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// New tokens from a refresh.
#[derive(Debug, Clone)]
pub struct Refreshed {
    pub bot_token: SlackToken,
    pub refresh_token: SlackToken,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct SlackOAuthClient {
    app: SlackApp,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct Answer {
    ok: bool,
    error: Option<String>,
    access_token: Option<String>,
    token_type: Option<String>,
    scope: Option<String>,
    bot_user_id: Option<String>,
    app_id: Option<String>,
    team: Option<Named>,
    enterprise: Option<Named>,
    #[serde(default)]
    is_enterprise_install: bool,
    refresh_token: Option<String>,
    expires_in: Option<i64>,
}

#[derive(Deserialize)]
struct Named {
    id: Option<String>,
    name: Option<String>,
}

impl SlackOAuthClient {
    pub fn new(app: SlackApp) -> Result<Self, HttpClientError> {
        let client = crate::outbound::client(|builder| builder.timeout(Duration::from_secs(10)))?;
        Ok(Self { app, client })
    }

    pub fn app(&self) -> &SlackApp {
        &self.app
    }

    async fn call(&self, form: &[(&str, &str)]) -> Result<Answer, OAuthError> {
        let url = format!("{}/oauth.v2.access", self.app.api_url.trim_end_matches('/'));
        let response = self
            .client
            .post(url)
            .basic_auth(&self.app.client_id, Some(&self.app.client_secret))
            .form(form)
            .send()
            .await
            .map_err(|e| {
                OAuthError::Unreachable(if e.is_timeout() { "timed out".into() } else { "no answer".into() })
            })?;
        let status = response.status();
        let answer: Answer = response
            .json()
            .await
            .map_err(|_| OAuthError::Unreachable(format!("HTTP {} without Slack's JSON", status.as_u16())))?;
        if !answer.ok {
            return Err(OAuthError::Refused(clean(answer.error.as_deref().unwrap_or("unknown_error"))));
        }
        Ok(answer)
    }

    /// `grant_type=refresh_token`: new bot and refresh tokens (the old refresh token stops
    /// working once the new one is used).
    pub async fn refresh(&self, refresh_token: &SlackToken) -> Result<Refreshed, OAuthError> {
        let answer =
            self.call(&[("grant_type", "refresh_token"), ("refresh_token", refresh_token.expose())]).await?;
        let token = |raw: Option<String>, what: &str| {
            raw.and_then(|t| SlackToken::new(t).ok())
                .ok_or_else(|| OAuthError::Unreachable(format!("no {what} in Slack's answer")))
        };
        Ok(Refreshed {
            bot_token: token(answer.access_token, "access_token")?,
            refresh_token: token(answer.refresh_token, "refresh_token")?,
            expires_at: Utc::now() + chrono::Duration::seconds(answer.expires_in.unwrap_or(0)),
        })
    }
}

impl SlackOAuth for SlackOAuthClient {
    async fn exchange(&self, code: &str) -> Result<Grant, OAuthError> {
        let answer = self.call(&[("code", code), ("redirect_uri", &self.app.redirect_uri)]).await?;
        let malformed = |what: &str| OAuthError::Unreachable(format!("Slack's answer has no valid {what}"));
        if answer.token_type.as_deref().is_some_and(|t| t != "bot") {
            return Err(malformed("bot token"));
        }
        let id = |named: &Option<Named>| -> Result<Option<WorkspaceId>, OAuthError> {
            named
                .as_ref()
                .and_then(|n| n.id.as_deref())
                .map(WorkspaceId::new)
                .transpose()
                .map_err(|_| malformed("workspace id"))
        };
        let workspace =
            WorkspaceRef::new(id(&answer.team)?, id(&answer.enterprise)?, answer.is_enterprise_install)
                .map_err(|_| malformed("workspace"))?;
        let named = if workspace.is_enterprise_install() { &answer.enterprise } else { &answer.team };
        let workspace_name =
            named.as_ref().and_then(|n| n.name.clone()).unwrap_or_else(|| workspace.to_string());
        Ok(Grant {
            workspace,
            workspace_name,
            app_id: answer.app_id.ok_or_else(|| malformed("app_id"))?,
            bot_user_id: answer.bot_user_id.ok_or_else(|| malformed("bot_user_id"))?,
            bot_token: answer
                .access_token
                .and_then(|t| SlackToken::new(t).ok())
                .ok_or_else(|| malformed("access_token"))?,
            scopes: answer.scope.unwrap_or_default(),
            refresh_token: answer.refresh_token.and_then(|t| SlackToken::new(t).ok()),
            expires_at: answer.expires_in.map(|s| Utc::now() + chrono::Duration::seconds(s)),
        })
    }
}

/// Slack's error codes are short snake_case words; anything else is not echoed.
fn clean(code: &str) -> String {
    if !code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        code.to_owned()
    } else {
        "unknown_error".to_owned()
    }
}

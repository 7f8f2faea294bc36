//! Operator commands: tenants, workspaces, agents, secrets, Slack installations.

use std::num::NonZeroU32;

use anyhow::Context;
use chrono::Utc;
use doorman_adapters::bridge::DestinationPolicy;
use doorman_adapters::postgres::PgOperator;
use doorman_domain::{
    AgentSecret, AgentUrl, OperatorError, Platform, TenantId, TenantName, WorkspaceId, WorkspaceRef,
};
use serde_json::json;

use super::output;
use crate::cli::{
    AgentCommand, DatabaseArgs, OnOff, SecretsCommand, SlackCommand, TenantCommand, WorkspaceCommand,
};
use crate::config::{keyring, slack_install};

pub(super) async fn connect(db: &DatabaseArgs) -> anyhow::Result<PgOperator> {
    PgOperator::connect(db.database_url.expose()).await.context("connecting to the database")
}

/// The operator error, with what to do about it when the CLI knows.
pub(super) fn explain(error: OperatorError) -> anyhow::Error {
    match error {
        OperatorError::NoAgent(tenant) => {
            anyhow::anyhow!("tenant {tenant} has no agent configured; run `doorman agent set` first")
        }
        OperatorError::UnknownTenant(tenant) => {
            anyhow::anyhow!("no tenant with id {tenant}; `doorman tenant add` prints new ids")
        }
        other => other.into(),
    }
}

pub(super) fn tenant_id(raw: &str) -> anyhow::Result<TenantId> {
    raw.parse().with_context(|| format!("--tenant {raw:?}"))
}

pub async fn tenant(command: TenantCommand) -> anyhow::Result<()> {
    match command {
        TenantCommand::Add { name, db } => {
            let name = TenantName::new(name).context("--name")?;
            let id = connect(&db).await?.create_tenant(&name).await.map_err(explain)?;
            tracing::info!(tenant.id = %id, name = %name, "tenant created");
            output::line(&id.to_string());
        }
        TenantCommand::RetainPayloads { tenant, setting, db } => {
            let tenant = tenant_id(&tenant)?;
            let on = setting == OnOff::On;
            connect(&db).await?.set_retain_payloads(tenant, on).await.map_err(explain)?;
            tracing::info!(tenant.id = %tenant, retain_payloads = on, "payload retention changed");
            output::line(&if on {
                format!(
                    "tenant {tenant} keeps the payloads of claimed events until they are handled (sealed)"
                )
            } else {
                format!("tenant {tenant} keeps no new payloads; those already kept go when handled or pruned")
            });
        }
    }
    Ok(())
}

pub async fn workspace(command: WorkspaceCommand) -> anyhow::Result<()> {
    match command {
        WorkspaceCommand::Link { tenant, team_id, enterprise_id, db } => {
            let tenant = tenant_id(&tenant)?;
            let team = team_id.map(WorkspaceId::new).transpose().context("--team-id")?;
            let enterprise = enterprise_id.map(WorkspaceId::new).transpose().context("--enterprise-id")?;
            // Only an enterprise: an org-wide install, named by the enterprise alone.
            let org_wide = team.is_none();
            let workspace = WorkspaceRef::new(team, enterprise, org_wide).map_err(|_| {
                anyhow::anyhow!("give --team-id, --enterprise-id (org-wide install), or both")
            })?;
            connect(&db).await?.link_workspace(tenant, Platform::Slack, &workspace).await.map_err(explain)?;
            output::line(&format!("linked Slack workspace {workspace} to tenant {tenant}"));
        }
    }
    Ok(())
}

pub async fn agent(command: AgentCommand) -> anyhow::Result<()> {
    match command {
        AgentCommand::Set { tenant, url, secret, keys, destinations, db } => {
            let tenant = tenant_id(&tenant)?;
            let url = AgentUrl::parse(&url).context("--url")?;
            // The rule the bridge applies when it dispatches, checked before anything is stored.
            DestinationPolicy { allow_private: destinations.agent_allow_private }
                .check_resolved(&url)
                .await
                .map_err(|refused| anyhow::anyhow!("--url refused: {refused}"))?;
            let secret = AgentSecret::parse(secret.expose()).context("--secret")?;
            let keys = keyring(&keys)?;
            connect(&db).await?.set_agent(tenant, &url, &secret, &keys).await.map_err(explain)?;
            output::line(&format!("agent for tenant {tenant} set to {}", url.redacted()));
        }
        AgentCommand::Pause(target) => {
            let tenant = tenant_id(&target.tenant)?;
            connect(&target.db).await?.set_paused(tenant, true).await.map_err(explain)?;
            output::line(&format!(
                "agent for tenant {tenant} paused: deliveries are answered 503 until resumed"
            ));
        }
        AgentCommand::Resume(target) => {
            let tenant = tenant_id(&target.tenant)?;
            connect(&target.db).await?.set_paused(tenant, false).await.map_err(explain)?;
            output::line(&format!("agent for tenant {tenant} resumed"));
        }
    }
    Ok(())
}

pub async fn secrets(command: SecretsCommand) -> anyhow::Result<()> {
    match command {
        SecretsCommand::Rotate { batch, json, keys, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let keys = keyring(&keys)?;
            let rotation = connect(&db).await?.rotate_secrets(&keys, batch).await.map_err(explain)?;
            if json {
                output::json(&json!({ "resealed": rotation.resealed, "key": keys.current() }));
            } else {
                output::line(&format!(
                    "sealed {} secret(s) with key {:?}; every stored secret now uses it",
                    rotation.resealed,
                    keys.current()
                ));
            }
        }
    }
    Ok(())
}

pub async fn slack(command: SlackCommand) -> anyhow::Result<()> {
    match command {
        SlackCommand::InstallLink { tenant, expires_in, slack_app, db } => {
            let tenant = tenant_id(&tenant)?;
            let Some(install) = slack_install(&slack_app)? else {
                anyhow::bail!(
                    "installs are off: set SLACK_CLIENT_ID and SLACK_CLIENT_SECRET (and DOORMAN_PUBLIC_URL) as for `doorman serve`"
                );
            };
            let expires_at = Utc::now() + chrono::Duration::from_std(*expires_in).context("--expires-in")?;
            let token = connect(&db).await?.create_install_link(tenant, expires_at).await.map_err(explain)?;
            output::line(&format!("{}/slack/install/{token}", install.public_url));
        }
        SlackCommand::Installations { tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let found = connect(&db).await?.installations(tenant).await?;
            if json {
                let rows: Vec<_> = found
                    .iter()
                    .map(|i| {
                        json!({
                            "tenant_id": i.tenant_id.to_string(),
                            "team_id": i.team_id,
                            "enterprise_id": i.enterprise_id,
                            "is_enterprise_install": i.is_enterprise_install,
                            "app_id": i.app_id,
                            "bot_user_id": i.bot_user_id,
                            "scopes": i.scopes,
                            "has_bot_token": i.has_bot_token,
                            "token_expires_at": i.token_expires_at.map(|t| t.to_rfc3339()),
                            "installed_at": i.installed_at.to_rfc3339(),
                            "updated_at": i.updated_at.to_rfc3339(),
                        })
                    })
                    .collect();
                output::json(&serde_json::Value::Array(rows));
            } else if found.is_empty() {
                output::line("no installations");
            } else {
                output::line(
                    "TENANT                                WORKSPACE             BOT USER     TOKEN    SCOPES",
                );
                for i in &found {
                    let workspace = match (&i.team_id, &i.enterprise_id) {
                        (Some(t), _) => t.clone(),
                        (None, Some(e)) => format!("{e} (org-wide)"),
                        (None, None) => "-".into(),
                    };
                    let token = if i.has_bot_token { "present" } else { "revoked" };
                    output::line(&format!(
                        "{:<37} {:<21} {:<12} {:<8} {}",
                        i.tenant_id, workspace, i.bot_user_id, token, i.scopes
                    ));
                }
            }
        }
        SlackCommand::Uninstall { tenant, team_id, enterprise_id, db } => {
            let tenant = tenant_id(&tenant)?;
            let workspace = workspace_ref(team_id, enterprise_id)?;
            if connect(&db).await?.uninstall(tenant, &workspace).await.map_err(explain)? {
                output::line(&format!("removed tenant {tenant}'s installation of {workspace} and its link"));
            } else {
                anyhow::bail!("tenant {tenant} has no installation or link for {workspace}");
            }
        }
        SlackCommand::PruneStates { batch, json, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let deleted = connect(&db).await?.prune_install_states(batch).await?;
            if json {
                output::json(&json!({ "deleted": deleted }));
            } else {
                output::line(&format!("deleted {deleted} expired or used install states"));
            }
        }
    }
    Ok(())
}

/// A team (possibly in an enterprise), or with only an enterprise an org-wide install.
fn workspace_ref(team_id: Option<String>, enterprise_id: Option<String>) -> anyhow::Result<WorkspaceRef> {
    let team = team_id.map(WorkspaceId::new).transpose().context("--team-id")?;
    let enterprise = enterprise_id.map(WorkspaceId::new).transpose().context("--enterprise-id")?;
    let org_wide = team.is_none();
    WorkspaceRef::new(team, enterprise, org_wide)
        .map_err(|_| anyhow::anyhow!("give --team-id, --enterprise-id (org-wide install), or both"))
}

//! The command line's face of the operator use cases: tenants, workspaces, agents, Slack
//! installs; and the maintenance commands (secrets, install states). Each converts its flags
//! into a use case's arguments and its answer into lines or `--json`; the rules are the use
//! cases'.

use std::num::NonZeroU32;

use anyhow::Context;
use doorman_domain::usecases::operator::installs::LinkLifetime;
use doorman_domain::{
    AgentSecret, AgentUrl, AuditAction, PageLimit, PageRequest, RedeliverySchedule, TenantName, WorkspaceId,
};
use serde_json::json;

use super::context::{Cli, Needs, explain, maintenance, tenant_id};
use super::output;
use crate::cli::settings::{destinations, keyring, slack_install};
use crate::cli::{AgentCommand, OnOff, SecretsCommand, SlackCommand, TenantCommand, WorkspaceCommand};
use crate::documents::{
    AgentDoc, InstallationDoc, OffboardedDoc, TenantDoc, WorkspaceDoc, WorkspaceList, list_of,
};

list_of!(
    /// Every tenant (the command line's `tenant list --json`).
    TenantList,
    TenantDoc
);

pub async fn tenant(command: TenantCommand) -> anyhow::Result<()> {
    match command {
        TenantCommand::Add { name, db } => {
            let name = TenantName::new(name).context("--name")?;
            let cli = Cli::owner(&db, Needs::default());
            let created = cli.operator.create_tenant(&cli.caller, name, None).await.map_err(explain)?;
            tracing::info!(tenant.id = %created.tenant.id, name = %created.tenant.name, "tenant created");
            output::line(&created.tenant.id.to_string());
        }
        TenantCommand::List { json, db } => {
            let cli = Cli::owner(&db, Needs::default());
            let mut page = PageRequest { limit: PageLimit::new(PageLimit::MAX)?, after: None };
            let mut tenants = Vec::new();
            loop {
                let listed = cli.operator.tenants(&cli.caller, vec![], &page).await.map_err(explain)?;
                tenants.extend(listed.items.into_iter().map(TenantDoc::from));
                match listed.next {
                    Some(next) => page.after = Some(next),
                    None => break,
                }
            }
            if json {
                output::json(&serde_json::to_value(TenantList { items: tenants })?);
            } else if tenants.is_empty() {
                output::line("no tenants");
            } else {
                output::line(
                    "ID                                    CREATED AT            PAYLOADS  REDELIVERY               READ-ONLY PORTALS  NAME",
                );
                for t in &tenants {
                    let kept = if t.retain_payloads { "kept" } else { "-" };
                    let redelivery = t.redelivery.as_ref().map_or("-", |r| r.schedule.as_str());
                    let portals = if t.read_only_portals_read_payloads { "read payloads" } else { "-" };
                    output::line(&format!(
                        "{:<37} {:<21} {:<9} {:<24} {:<18} {}",
                        t.id,
                        t.created_at.format("%Y-%m-%d %H:%M:%S"),
                        kept,
                        redelivery,
                        portals,
                        t.name
                    ));
                }
            }
        }
        TenantCommand::RetainPayloads { tenant, setting, db } => {
            let tenant = tenant_id(&tenant)?;
            let on = setting == OnOff::On;
            let cli = Cli::owner(&db, Needs::default());
            cli.operator.set_retain_payloads(&cli.caller, tenant, on).await.map_err(explain)?;
            tracing::info!(tenant.id = %tenant, retain_payloads = on, "payload retention changed");
            output::line(&if on {
                format!(
                    "tenant {tenant} keeps the payloads of claimed events until they are handled (sealed)"
                )
            } else {
                format!("tenant {tenant} keeps no new payloads; those already kept go when handled or pruned")
            });
        }
        TenantCommand::ReadOnlyPortalsReadPayloads { tenant, setting, db } => {
            let tenant = tenant_id(&tenant)?;
            let on = setting == OnOff::On;
            let cli = Cli::owner(&db, Needs::default());
            cli.operator
                .set_read_only_portals_read_payloads(&cli.caller, tenant, on)
                .await
                .map_err(explain)?;
            tracing::info!(tenant.id = %tenant, read_only_portals_read_payloads = on, "read-only portals' payloads changed");
            output::line(&if on {
                format!(
                    "tenant {tenant}'s read-only portal keys made with --read-payloads read its kept payloads"
                )
            } else {
                format!("tenant {tenant}'s read-only portal keys read no payloads")
            });
        }
        TenantCommand::Redelivery { tenant, setting, schedule, db } => {
            let tenant = tenant_id(&tenant)?;
            let schedule = match (setting, schedule) {
                (OnOff::On, None) => Some(RedeliverySchedule::standard()),
                (OnOff::On, Some(words)) => Some(RedeliverySchedule::parse(&words).context("--schedule")?),
                (OnOff::Off, None) => None,
                (OnOff::Off, Some(_)) => anyhow::bail!("--schedule goes with on only"),
            };
            let cli = Cli::owner(&db, Needs::default());
            cli.operator.set_redelivery(&cli.caller, tenant, schedule.clone()).await.map_err(explain)?;
            match &schedule {
                Some(schedule) => {
                    tracing::info!(tenant.id = %tenant, redelivery = %schedule, "redelivery changed");
                    output::line(&format!(
                        "tenant {tenant}'s events that were not handled are sent again after {schedule}, \
                         their payloads kept (sealed) until handled or given up"
                    ));
                }
                None => {
                    tracing::info!(tenant.id = %tenant, redelivery = "off", "redelivery changed");
                    output::line(&format!("tenant {tenant}'s events are not sent again"));
                }
            }
        }
        TenantCommand::Rename { tenant, name, db } => {
            let tenant = tenant_id(&tenant)?;
            let name = TenantName::new(name).context("--name")?;
            let cli = Cli::owner(&db, Needs::default());
            let renamed = cli.operator.rename_tenant(&cli.caller, tenant, name).await.map_err(explain)?;
            output::line(&format!("tenant {tenant} renamed to {:?}", renamed.name));
        }
        TenantCommand::Delete { tenant, yes, json, db } => {
            let tenant = tenant_id(&tenant)?;
            if !yes {
                anyhow::bail!(
                    "deleting tenant {tenant} removes its workspaces, installations, agent, keys and receipts, \
                     with no undo: run again with --yes"
                );
            }
            let cli = Cli::owner(&db, Needs::default());
            let offboarded = cli.operator.delete_tenant(&cli.caller, tenant).await.map_err(explain)?;
            tracing::info!(tenant.id = %tenant, receipts = offboarded.receipts, "tenant deleted");
            if json {
                output::json(&serde_json::to_value(OffboardedDoc::new(tenant, &offboarded))?);
            } else if offboarded.receipts_left {
                output::line(&format!(
                    "tenant {tenant} deleted with its directory and {} receipt(s); deleting the rest stopped                      (the audit's tenant.purge entry says why): the next `doorman receipts prune` deletes them",
                    offboarded.receipts
                ));
            } else {
                output::line(&format!(
                    "tenant {tenant} deleted with its directory and {} receipt(s); its audit entries are kept",
                    offboarded.receipts
                ));
            }
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
            if team.is_none() && enterprise.is_none() {
                anyhow::bail!("give --team-id, --enterprise-id (org-wide install), or both");
            }
            let cli = Cli::owner(&db, Needs::default());
            let linked =
                cli.operator.link_workspace(&cli.caller, tenant, team, enterprise).await.map_err(explain)?;
            let workspace = &linked.link.workspace;
            output::line(&if linked.new {
                format!("linked Slack workspace {workspace} to tenant {tenant}")
            } else {
                format!("Slack workspace {workspace} was already linked to tenant {tenant}")
            });
        }
        WorkspaceCommand::List { tenant, json, db } => {
            let tenant = tenant_id(&tenant)?;
            let cli = Cli::owner(&db, Needs::default());
            let links = cli.operator.workspaces(&cli.caller, tenant).await.map_err(explain)?;
            if json {
                let items: Vec<WorkspaceDoc> = links.into_iter().map(WorkspaceDoc::from).collect();
                output::json(&serde_json::to_value(WorkspaceList { items })?);
            } else if links.is_empty() {
                output::line(&format!("tenant {tenant} has no linked workspaces"));
            } else {
                for link in &links {
                    output::line(&format!(
                        "{:<30} linked {}",
                        link.workspace.to_string(),
                        link.linked_at.format("%Y-%m-%d %H:%M:%S")
                    ));
                }
            }
        }
        WorkspaceCommand::Unlink { tenant, id, db } => {
            let tenant = tenant_id(&tenant)?;
            let id = WorkspaceId::new(id).context("--id")?;
            let cli = Cli::owner(&db, Needs::default());
            cli.operator.unlink_workspace(&cli.caller, tenant, &id).await.map_err(explain)?;
            output::line(&format!(
                "unlinked Slack workspace {id} from tenant {tenant} (and removed its installation, if any)"
            ));
        }
    }
    Ok(())
}

pub async fn agent(command: AgentCommand) -> anyhow::Result<()> {
    match command {
        AgentCommand::Set { tenant, url, secret, keys, destinations: allowed, db } => {
            let tenant = tenant_id(&tenant)?;
            let url = AgentUrl::from_operator(&url).context("--url")?;
            let secret = AgentSecret::parse(secret.expose()).context("--secret")?;
            let needs = Needs {
                keys: Some(keyring(&keys)?),
                destinations: destinations(&allowed),
                ..Needs::default()
            };
            let cli = Cli::owner(&db, needs);
            let shown = url.shown();
            cli.operator.set_agent(&cli.caller, tenant, url, secret).await.map_err(|error| match error {
                doorman_domain::OperatorError::Refused { reason, .. } => {
                    anyhow::anyhow!("--url refused: {reason}")
                }
                other => explain(other),
            })?;
            output::line(&format!("agent for tenant {tenant} set to {shown}"));
        }
        AgentCommand::Show { target, json } => {
            let tenant = tenant_id(&target.tenant)?;
            let cli = Cli::owner(&target.db, Needs::default());
            let agent = AgentDoc::from(cli.operator.agent(&cli.caller, tenant).await.map_err(explain)?);
            if json {
                output::json(&serde_json::to_value(&agent)?);
            } else {
                let at = |t: Option<chrono::DateTime<chrono::Utc>>| {
                    t.map_or_else(String::new, |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                };
                let state = match (agent.disabled_at, agent.paused, agent.failing_since) {
                    (Some(disabled), _, since) => {
                        format!("disabled by Doorman at {}, failing since {}", at(Some(disabled)), at(since))
                    }
                    (None, true, _) => "paused".to_owned(),
                    (None, false, Some(since)) => format!("active, failing since {}", at(Some(since))),
                    (None, false, None) => "active".to_owned(),
                };
                output::line(&format!(
                    "agent for tenant {tenant}: {} ({state}; signing secret set)",
                    agent.url.as_deref().unwrap_or_default()
                ));
            }
        }
        AgentCommand::Pause(target) => {
            let tenant = tenant_id(&target.tenant)?;
            let cli = Cli::owner(&target.db, Needs::default());
            cli.operator.pause_agent(&cli.caller, tenant, true).await.map_err(explain)?;
            output::line(&format!(
                "agent for tenant {tenant} paused: deliveries are answered 503 until resumed"
            ));
        }
        AgentCommand::Resume(target) => {
            let tenant = tenant_id(&target.tenant)?;
            let cli = Cli::owner(&target.db, Needs::default());
            cli.operator.pause_agent(&cli.caller, tenant, false).await.map_err(explain)?;
            output::line(&format!("agent for tenant {tenant} resumed"));
        }
        AgentCommand::Remove(target) => {
            let tenant = tenant_id(&target.tenant)?;
            let cli = Cli::owner(&target.db, Needs::default());
            cli.operator.remove_agent(&cli.caller, tenant).await.map_err(explain)?;
            output::line(&format!(
                "agent for tenant {tenant} removed: deliveries are answered 503 until one is set"
            ));
        }
    }
    Ok(())
}

pub async fn secrets(command: SecretsCommand) -> anyhow::Result<()> {
    match command {
        SecretsCommand::Rotate { batch, json, keys, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let keys = keyring(&keys)?;
            let mut maintenance = maintenance(&db).await?;
            let cli = Cli::owner(&db, Needs::default());
            let run = maintenance.rotate_secrets(&keys, batch);
            let done = |rotation: &doorman_adapters::postgres::maintenance::Rotation| {
                format!("resealed {} with key {}", rotation.resealed, keys.current())
            };
            let rotation = cli
                .operator
                .maintain(&cli.caller, AuditAction::SecretsRotate, run, done)
                .await
                .map_err(explain)?;
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
            let lifetime = LinkLifetime::new(*expires_in).context("--expires-in")?;
            let install_base_url = slack_install(&slack_app)?.map(|install| install.public_url);
            let cli = Cli::owner(&db, Needs { install_base_url, ..Needs::default() });
            let link =
                cli.operator.create_install_link(&cli.caller, tenant, lifetime).await.map_err(explain)?;
            output::line(&link.url);
        }
        SlackCommand::Installations { tenant, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let cli = Cli::owner(&db, Needs::default());
            let found = cli.operator.installations(&cli.caller, tenant).await.map_err(explain)?;
            if json {
                let items: Vec<InstallationDoc> = found.into_iter().map(InstallationDoc::from).collect();
                output::json(&serde_json::to_value(items)?);
            } else if found.is_empty() {
                output::line("no installations");
            } else {
                output::line(
                    "TENANT                                WORKSPACE             BOT USER     TOKEN    SCOPES",
                );
                for i in &found {
                    let token = if i.has_bot_token { "present" } else { "revoked" };
                    output::line(&format!(
                        "{:<37} {:<21} {:<12} {:<8} {}",
                        i.tenant,
                        i.workspace.to_string(),
                        i.bot_user_id,
                        token,
                        i.scopes
                    ));
                }
            }
        }
        SlackCommand::Uninstall { tenant, team_id, enterprise_id, db } => {
            let tenant = tenant_id(&tenant)?;
            // An installation is named by its team, or (org-wide) by its enterprise alone.
            let id = match (team_id, enterprise_id) {
                (Some(team), _) => WorkspaceId::new(team).context("--team-id")?,
                (None, Some(enterprise)) => WorkspaceId::new(enterprise).context("--enterprise-id")?,
                (None, None) => anyhow::bail!("give --team-id, or --enterprise-id for an org-wide install"),
            };
            let cli = Cli::owner(&db, Needs::default());
            match cli.operator.uninstall(&cli.caller, tenant, &id).await {
                Ok(()) => {
                    output::line(&format!("removed tenant {tenant}'s installation of {id} and its link"))
                }
                Err(doorman_domain::OperatorError::NotFound { .. }) => {
                    anyhow::bail!("tenant {tenant} has no installation for {id}")
                }
                Err(other) => return Err(explain(other)),
            }
        }
        SlackCommand::PruneStates { batch, json, db } => {
            let batch = NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let mut maintenance = maintenance(&db).await?;
            let cli = Cli::owner(&db, Needs::default());
            let run = maintenance.prune_install_states(batch);
            let deleted = cli
                .operator
                .maintain(&cli.caller, AuditAction::InstallStatesPrune, run, |deleted| {
                    format!("deleted {deleted}")
                })
                .await
                .map_err(explain)?;
            if json {
                output::json(&json!({ "deleted": deleted }));
            } else {
                output::line(&format!("deleted {deleted} expired or used install states"));
            }
        }
    }
    Ok(())
}

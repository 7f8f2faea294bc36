//! `doorman admin …`: serve the admin API, manage its keys, read the audit trail.

use anyhow::Context;
use doorman_domain::{
    AuditAction, AuditCursor, AuditFilter, KeyId, KeyName, KeyScope, PageLimit, PageRequest,
};

use super::context::{Cli, Needs, explain, maintenance, tenant_id};
use super::output;
use crate::cli::{AdminCommand, ApiKeysCommand};
use crate::config::AdminConfig;
use crate::documents::{AuditDoc, KeyDoc, NewKeyDoc, SignInLinkDoc};
use crate::operator;

pub async fn run(command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::Serve(args) => {
            let listening = |addr, metrics| {
                output::line(&format!(
                    "doorman admin API listening on http://{addr} (metrics on http://{metrics}/metrics)"
                ));
            };
            operator::run(AdminConfig::from_args(&args)?, listening).await
        }
        AdminCommand::Keys(command) => keys(command).await,
        AdminCommand::Openapi => {
            output::text(&operator::openapi_document());
            Ok(())
        }
        AdminCommand::PruneSessions { batch, json, db } => {
            let batch = std::num::NonZeroU32::new(batch).context("--batch must be at least 1")?;
            let mut maintenance = maintenance(&db).await?;
            let cli = Cli::owner(&db, Needs::default());
            let run = maintenance.prune_console_sessions(batch);
            let deleted = cli
                .operator
                .maintain(&cli.caller, AuditAction::ConsoleSessionsPrune, run, |deleted| {
                    format!("deleted {deleted}")
                })
                .await
                .map_err(explain)?;
            if json {
                output::json(&serde_json::json!({ "deleted": deleted }));
            } else {
                output::line(&format!(
                    "deleted {deleted} ended or expired console sessions and sign-in links"
                ));
            }
            Ok(())
        }
        AdminCommand::Audit { tenant, action, key, since, until, limit, json, db } => {
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let filter = audit_filter(action, key, since, until)?;
            let cli = Cli::owner(&db, Needs::default());
            let mut page = PageRequest::<AuditCursor> { limit: PageLimit::new(PageLimit::MAX)?, after: None };
            let mut entries = Vec::new();
            while entries.len() < limit {
                let listed =
                    cli.operator.audit(&cli.caller, tenant, &filter, &page).await.map_err(explain)?;
                entries.extend(listed.items.into_iter().map(AuditDoc::from));
                match listed.next {
                    Some(next) => page.after = Some(next),
                    None => break,
                }
            }
            entries.truncate(limit);
            if json {
                output::json(&serde_json::to_value(&entries)?);
            } else if entries.is_empty() {
                output::line("no audit entries");
            } else {
                for e in &entries {
                    let who = if e.actor_kind == "key" {
                        format!("key {} ({})", e.actor_name, e.actor_id)
                    } else {
                        format!("cli ({})", e.actor_id)
                    };
                    output::line(&format!(
                        "{}  {:<22} {:<36} tenant {}  {}  request {}",
                        e.at.format("%Y-%m-%d %H:%M:%S"),
                        e.action,
                        who,
                        e.tenant_id.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
                        e.target.as_deref().unwrap_or("-"),
                        e.request_id
                    ));
                }
            }
            Ok(())
        }
    }
}

/// The trail's filters as the API's query takes them, each refused with the flag it came from:
/// `--action` (a word of the trail), `--key` (a key's id), `--since` (at or after) and `--until`
/// (before, and not before `--since`), RFC 3339.
fn audit_filter(
    action: Option<String>,
    key: Option<String>,
    since: Option<String>,
    until: Option<String>,
) -> anyhow::Result<AuditFilter> {
    let action = action
        .map(|word| {
            AuditAction::parse(&word).map_err(|_| {
                let words: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
                anyhow::anyhow!("--action {word:?}: must be one of {}", words.join(", "))
            })
        })
        .transpose()?;
    let key = key
        .map(|id| {
            id.parse::<KeyId>().map_err(|_| anyhow::anyhow!("--key {id:?}: must be a key's id (a UUID)"))
        })
        .transpose()?;
    let instant = |flag: &str, raw: Option<String>| {
        raw.map(|raw| {
            operator::query::rfc3339(&raw)
                .ok_or_else(|| anyhow::anyhow!("--{flag} {raw:?}: {}", operator::query::INSTANT_RULE))
        })
        .transpose()
    };
    let filter =
        AuditFilter { action, key, since: instant("since", since)?, until: instant("until", until)? };
    filter.check().map_err(|_| anyhow::anyhow!("--until must not be before --since"))?;
    Ok(filter)
}

async fn keys(command: ApiKeysCommand) -> anyhow::Result<()> {
    match command {
        ApiKeysCommand::Create { name, tenant, read_only, read_payloads, expires_in, json, db } => {
            let name = KeyName::new(name).context("--name")?;
            let tenant = tenant.as_deref().map(tenant_id).transpose()?;
            let scope = KeyScope { tenant, read_only, read_payloads };
            let expires_at = expires_in
                .map(|d| chrono::Duration::from_std(d.into()).map(|d| chrono::Utc::now() + d))
                .transpose()
                .context("--expires-in is too long")?;
            let cli = Cli::owner(&db, Needs::default());
            let (made, secret) =
                cli.operator.create_key(&cli.caller, name, scope, expires_at).await.map_err(explain)?;
            tracing::info!(key.id = %made.id, read_only, read_payloads, tenant.id = ?scope.tenant, expires_at = ?made.expires_at, "admin API key created");
            if json {
                output::json(&serde_json::to_value(NewKeyDoc::new(made, &secret))?);
            } else {
                // The only time the key is shown: stdout, never a log.
                output::line(secret.expose());
            }
        }
        ApiKeysCommand::List { json, db } => {
            let cli = Cli::owner(&db, Needs::default());
            let keys: Vec<KeyDoc> = cli
                .operator
                .keys(&cli.caller)
                .await
                .map_err(explain)?
                .into_iter()
                .map(KeyDoc::from)
                .collect();
            if json {
                output::json(&serde_json::to_value(&keys)?);
            } else if keys.is_empty() {
                output::line("no admin API keys");
            } else {
                output::line(
                    "ID                                    SCOPE                                 ACCESS              STATE    LAST USED         NAME",
                );
                let now = chrono::Utc::now();
                for k in &keys {
                    let scope = k.tenant_id.map(|t| t.to_string()).unwrap_or_else(|| "every tenant".into());
                    let access = match (k.read_only, k.read_payloads) {
                        (true, false) => "read-only",
                        (true, true) => "read-only+payloads",
                        (false, false) => "read-write",
                        (false, true) => "read-write+payloads",
                    };
                    let state = k.state_at(now);
                    let used = k
                        .last_used_at
                        .map(|at| at.format("%Y-%m-%d %H:%M").to_string())
                        .unwrap_or_else(|| "never".into());
                    output::line(&format!(
                        "{:<37} {:<37} {:<19} {:<8} {:<17} {}",
                        k.id, scope, access, state, used, k.name
                    ));
                }
            }
        }
        ApiKeysCommand::Revoke { id, db } => {
            let id: KeyId = id.parse().context("the key id")?;
            let cli = Cli::owner(&db, Needs::default());
            cli.operator.revoke_key(&cli.caller, id).await.map_err(explain)?;
            output::line(&format!("revoked admin API key {id}: its next request is refused"));
        }
        ApiKeysCommand::SignInLink { id, console_url, json, db } => {
            let id: KeyId = id.parse().context("the key id")?;
            let console_base_url = console_url.as_ref().map(url::Url::to_string);
            let cli = Cli::owner(&db, Needs { console_base_url, ..Needs::default() });
            let link = cli.operator.create_sign_in_link(&cli.caller, id).await.map_err(explain)?;
            let doc = SignInLinkDoc::from(&link);
            if json {
                output::json(&serde_json::to_value(&doc)?);
            } else {
                // Shown this once: stdout, never a log.
                output::line(&doc.url);
            }
        }
    }
    Ok(())
}

//! One function per subcommand. Operator commands use an owner connection (they act across
//! tenants on purpose); results go to stdout, logs and errors to stderr.

mod admin;
pub mod context;
mod operator;
pub mod output;
mod receipts;

use anyhow::Context;
use doorman_adapters::postgres::migrations;

use super::{Command, DatabaseArgs};
use crate::config::ServeConfig;
use crate::slack;

pub async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => {
            let config = ServeConfig::from_args(&args)?;
            let listening = |addr, metrics| {
                output::line(&format!(
                    "doorman listening on http://{addr} (metrics on http://{metrics}/metrics)"
                ));
            };
            let drained = slack::run(config, listening).await?;
            if drained.unfinished > 0 {
                anyhow::bail!("{} dispatches did not finish before the drain timeout", drained.unfinished);
            }
            Ok(())
        }
        Command::Migrate(db) => migrate(&db).await,
        Command::Tenant(command) => operator::tenant(command).await,
        Command::Workspace(command) => operator::workspace(command).await,
        Command::Agent(command) => operator::agent(command).await,
        Command::Receipts(command) => receipts::run(command).await,
        Command::Secrets(command) => operator::secrets(command).await,
        Command::Slack(command) => operator::slack(command).await,
        Command::Admin(command) => admin::run(command).await,
    }
}

/// A command that printed its answer and must still exit 1 (a receipt that does not exist,
/// a replay that did not handle every event it selected). Not an error of the command.
#[derive(Debug)]
pub struct Unsuccessful(pub String);

impl std::fmt::Display for Unsuccessful {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsuccessful {}

async fn migrate(db: &DatabaseArgs) -> anyhow::Result<()> {
    let applied =
        migrations::run_pending(db.database_url.expose()).await.context("migrating the database")?;
    if applied.is_empty() {
        tracing::info!(
            embedded = migrations::embedded_count(),
            "database schema is current; nothing to apply"
        );
    } else {
        for version in &applied {
            tracing::info!(migration = %version, "applied migration");
        }
        tracing::info!(applied = applied.len(), "database schema is current");
    }
    Ok(())
}

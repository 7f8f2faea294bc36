//! `doorman migrate`

use anyhow::Context;
use doorman_adapters::postgres::migrations;

use crate::cli::DatabaseArgs;

pub async fn run(db: &DatabaseArgs) -> anyhow::Result<()> {
    let applied = migrations::run_pending(&db.database_url)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("migrating the database")?;
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

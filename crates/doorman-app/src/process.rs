//! What both serving processes (`doorman serve` and `doorman admin serve`) do at their start
//! and at their end: check the database login they were given, and wait for the signal to stop.

use anyhow::Context;
use doorman_adapters::postgres;

/// Refuses to start with a login that cannot act as `role` (it does not exist, its password
/// is refused, the role is missing, it is not a member), saying which; warns when it can do
/// more than the process needs, or when the server's messages are not in English and it may
/// not change that; starts anyway when the database cannot be reached (503 until it can).
/// Answers whether the process's sessions set `lc_messages = 'C'` (`PoolSettings::c_messages`).
pub async fn check_login(database_url: &str, role: &str) -> anyhow::Result<bool> {
    match postgres::login::check(database_url, role).await {
        Ok(postgres::login::Login::Ready { user, warnings, c_messages }) => {
            tracing::info!(login = %user, role, "database login checked");
            for warning in warnings {
                tracing::warn!(role, "{warning}");
            }
            Ok(c_messages)
        }
        Ok(postgres::login::Login::Unreachable(why)) => {
            tracing::warn!(error = %why, "the database cannot be reached yet; requests are answered 503 until it can");
            Ok(false)
        }
        Err(refused) => Err(anyhow::anyhow!("cannot start: {refused}")),
    }
}

/// Waits for SIGTERM or SIGINT.
pub async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM received"),
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
    }
    Ok(())
}

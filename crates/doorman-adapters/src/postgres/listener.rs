//! The directory listener: one connection per process, outside the pool, subscribed to the
//! `doorman_directory` channel that the directory tables' triggers notify (migration
//! `group_commit_and_directory_notices`), reporting to a [`Notices`] handle.
//!
//! It reports `subscribed` only once `LISTEN` has taken effect, and `lost` the moment its
//! connection ends (a restart, `pg_terminate_backend`, a network cut noticed by a failed
//! ping), then reconnects with a backoff. Until it is subscribed again, the directory
//! resolves from the database.

use std::future::poll_fn;
use std::time::Duration;

use doorman_domain::{Platform, TenantId, WorkspaceId};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

use super::connect::{Target, describe};
use crate::notified_directory::{Notice, Notices};

/// The channel the triggers notify.
pub const CHANNEL: &str = "doorman_directory";
/// How the listener's session is named in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "doorman-directory-listener";

/// How often an idle listener checks that its connection still answers: a connection that
/// died silently (no FIN) would otherwise leave the directory trusting a dead subscription.
const PING_EVERY: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(5);
// Half a second before the first reconnect: long enough that a killed listener is noticed
// as lost (its memory bypassed) rather than papered over by a quick re-subscription, short
// enough that the database takes every resolve only briefly.
const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Starts the listener on the current runtime. It runs until the task is aborted.
pub fn spawn(database_url: &str, notices: Notices) -> JoinHandle<()> {
    let url = database_url.to_owned();
    tokio::spawn(async move {
        let mut backoff = BACKOFF_MIN;
        loop {
            let mut subscribed = false;
            let outcome = listen(&url, &notices, &mut subscribed).await;
            notices.lost();
            if subscribed {
                // It worked until now: try again soon, not after a long backoff.
                backoff = BACKOFF_MIN;
            }
            match outcome {
                Ok(()) => tracing::warn!(
                    "directory listener's connection ended; resolving from the database until it is back"
                ),
                Err(error) => {
                    tracing::warn!(
                        error = %error,
                        retry_in_ms = backoff.as_millis() as u64,
                        "directory listener lost; resolving every workspace from the database until it is back"
                    );
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    })
}

/// One connection's life: connect, LISTEN, report notices until the connection ends.
/// `subscribed` tells the caller whether it got as far as listening.
/// The listener connects as the URL says, TLS included ([`super::connect`]).
async fn listen(url: &str, notices: &Notices, subscribed: &mut bool) -> Result<(), String> {
    let mut target = Target::parse(url).map_err(|e| e.to_string())?;
    target.config_mut().application_name(APPLICATION_NAME);
    let (client, mut connection) = target.connect().await?;

    // The connection must be polled for anything to happen, notices included.
    let (sender, mut received) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        loop {
            match poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(notification))) => {
                    if sender.send(notification.payload().to_owned()).is_err() {
                        return Ok(());
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            }
        }
    });

    let subscription = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if let Err(error) = subscription {
        driver.abort();
        return Err(describe(&error));
    }
    notices.subscribed();
    *subscribed = true;
    tracing::info!("directory listener subscribed: workspaces and agents are served from memory");

    loop {
        tokio::select! {
            payload = received.recv() => match payload {
                Some(payload) => notices.apply(&parse(&payload)),
                None => break,
            },
            () = tokio::time::sleep(PING_EVERY) => {
                match tokio::time::timeout(PING_TIMEOUT, client.simple_query("SELECT 1")).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        driver.abort();
                        return Err(describe(&error));
                    }
                    Err(_) => {
                        tracing::warn!("directory listener's connection did not answer a ping");
                        break;
                    }
                }
            }
        }
    }
    driver.abort();
    match driver.await {
        Ok(Err(error)) => Err(describe(&error)),
        _ => Ok(()),
    }
}

/// Reads a notice: `workspace:<platform>:<team or empty>:<enterprise or empty>` or
/// `tenant:<uuid>`. Anything else forgets everything (safe, if slower).
fn parse(payload: &str) -> Notice {
    let parsed = if let Some(rest) = payload.strip_prefix("tenant:") {
        rest.parse::<TenantId>().ok().map(Notice::Tenant)
    } else if let Some(rest) = payload.strip_prefix("workspace:") {
        let mut parts = rest.splitn(3, ':');
        let platform = parts.next().and_then(|p| p.parse::<Platform>().ok());
        let id = |part: Option<&str>| part.filter(|p| !p.is_empty()).and_then(|p| WorkspaceId::new(p).ok());
        let (team_id, enterprise_id) = (id(parts.next()), id(parts.next()));
        platform.map(|platform| Notice::Workspace { platform, team_id, enterprise_id })
    } else {
        None
    };
    parsed.unwrap_or_else(|| {
        tracing::warn!(payload = %payload.escape_debug(), "directory notice not understood; forgetting everything");
        Notice::Everything
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_parse_as_the_triggers_write_them() {
        let tenant = TenantId::generate();
        assert_eq!(parse(&format!("tenant:{tenant}")), Notice::Tenant(tenant));
        assert_eq!(
            parse("workspace:slack:T1:"),
            Notice::Workspace {
                platform: Platform::Slack,
                team_id: Some(WorkspaceId::new("T1").unwrap()),
                enterprise_id: None
            }
        );
        assert_eq!(
            parse("workspace:slack::E1"),
            Notice::Workspace {
                platform: Platform::Slack,
                team_id: None,
                enterprise_id: Some(WorkspaceId::new("E1").unwrap())
            }
        );
        for garbage in ["", "tenant:nope", "workspace:teams:T1:", "other:1"] {
            assert_eq!(parse(garbage), Notice::Everything, "{garbage}");
        }
    }
}

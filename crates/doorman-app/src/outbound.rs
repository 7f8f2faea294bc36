//! What every dispatcher sends with, serving (`doorman serve`) or replaying (the operator's
//! faces): built from the same settings, so a replay goes out as a live delivery does.

use anyhow::Context;
use doorman_adapters::bridge::{BridgeSettings, HttpAgentBridge};
use doorman_adapters::slack::oauth::SlackOAuthClient;

use crate::config::SlackInstall;

/// What every dispatcher sends with, serving or replaying: the agent bridge and, when the Slack
/// app is configured, the OAuth client that refreshes rotating tokens.
pub fn clients(
    bridge: &BridgeSettings,
    slack_app: Option<&SlackInstall>,
) -> anyhow::Result<(HttpAgentBridge, Option<SlackOAuthClient>)> {
    let bridge = HttpAgentBridge::new(bridge.clone()).context("building the agent bridge's HTTP client")?;
    let oauth = slack_app
        .map(|install| SlackOAuthClient::new(install.app.clone()))
        .transpose()
        .context("building the Slack OAuth client")?;
    Ok((bridge, oauth))
}

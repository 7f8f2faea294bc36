//! The dispatch document, version 1. `docs/dispatch-contract.md` is its specification; a
//! change here that is not additive needs a new version.

use doorman_domain::{Installation, Job};
use serde::Serialize;
use serde_json::value::RawValue;

pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    tenant_id: String,
    platform: &'static str,
    kind: &'static str,
    external_event_id: Option<&'a str>,
    event_type: &'a str,
    workspace: Workspace<'a>,
    delivery: Delivery,
    received_at: String,
    payload: &'a RawValue,
    /// Present when the workspace has an installation with a bot token: what the agent needs
    /// to answer in Slack (Bolt's `context.botToken` and friends).
    #[serde(skip_serializing_if = "Option::is_none")]
    authorization: Option<Authorization<'a>>,
}

#[derive(Serialize)]
struct Authorization<'a> {
    bot_token: &'a str,
    bot_user_id: &'a str,
    team_id: Option<&'a str>,
    enterprise_id: Option<&'a str>,
    scopes: Vec<&'a str>,
}

#[derive(Serialize)]
struct Workspace<'a> {
    team_id: Option<&'a str>,
    enterprise_id: Option<&'a str>,
    enterprise_install: bool,
}

#[derive(Serialize)]
struct Delivery {
    attempt: u32,
    retry_reason: Option<&'static str>,
    replay: bool,
    /// Which redelivery this is (ADR 26); 0 for the live delivery and a replay.
    redelivery: u32,
}

/// Renders the document for a job. The payload is embedded as the JSON text the platform
/// sent (checked to be JSON when it was parsed); it is not re-encoded.
pub fn render(job: &Job, installation: Option<&Installation>) -> Result<Vec<u8>, serde_json::Error> {
    let event = job.event();
    let payload: &RawValue = serde_json::from_str(event.payload.as_json_text())?;
    let document = Document {
        version: VERSION,
        tenant_id: job.tenant().to_string(),
        platform: event.platform.as_str(),
        kind: event.kind.name(),
        external_event_id: event.external_id.as_ref().map(|id| id.as_str()),
        event_type: event.kind.label().as_str(),
        workspace: Workspace {
            team_id: event.workspace.team_id().map(|t| t.as_str()),
            enterprise_id: event.workspace.enterprise_id().map(|e| e.as_str()),
            enterprise_install: event.workspace.is_enterprise_install(),
        },
        delivery: Delivery {
            attempt: event.delivery.attempt,
            retry_reason: event.delivery.retry_reason.map(|r| r.as_str()),
            replay: event.delivery.replay,
            redelivery: event.delivery.redelivery,
        },
        received_at: job.received_at().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        payload,
        authorization: installation.and_then(|i| {
            Some(Authorization {
                bot_token: i.bot_token.as_ref()?.expose(),
                bot_user_id: &i.bot_user_id,
                team_id: i.team_id.as_ref().map(|t| t.as_str()),
                enterprise_id: i.enterprise_id.as_ref().map(|e| e.as_str()),
                scopes: i.scopes.split(',').map(str::trim).filter(|s| !s.is_empty()).collect(),
            })
        }),
    };
    serde_json::to_vec(&document)
}

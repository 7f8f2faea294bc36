//! Parsing verified Slack bodies into domain events.
//!
//! Only the fields Doorman needs are read; the payload itself is forwarded to the agent
//! untouched (for forms, as a JSON object of the fields). Which workspace an event is for
//! follows `docs/slack-protocol.md`: the installing workspace from `authorizations[0]`
//! first, then the top-level ids (which in a shared channel name the *source* organisation).

use doorman_domain::{
    Delivery, EventKind, ExternalEventId, InboundEvent, Label, Lifecycle, Payload, Platform, WorkspaceId,
    WorkspaceRef,
};
use serde::Deserialize;

use super::rejection::Rejection;

/// What a verified body turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// An event for a tenant's agent.
    Event(InboundEvent),
    /// Slack checking the Request URL: answer with the challenge.
    UrlVerification { challenge: String },
    /// A workspace exceeded Slack's event rate limit; events are being dropped by Slack.
    RateLimited { team_id: Option<String>, minute_rate_limited: Option<i64> },
    /// `ssl_check=1`: Slack checking the certificate; answer 200.
    SslCheck,
}

/// The longest challenge echoed back; Slack's are about 50 characters.
const MAX_CHALLENGE_LEN: usize = 256;

// --- Events API --------------------------------------------------------------------------

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    envelope_type: String,
    team_id: Option<String>,
    enterprise_id: Option<String>,
    is_enterprise_install: Option<bool>,
    event_id: Option<String>,
    event: Option<InnerEvent>,
    #[serde(default)]
    authorizations: Vec<Authorization>,
    challenge: Option<String>,
    minute_rate_limited: Option<i64>,
}

#[derive(Deserialize)]
struct InnerEvent {
    #[serde(rename = "type")]
    event_type: Option<String>,
    /// `tokens_revoked` only: the user ids whose tokens went, by kind.
    tokens: Option<RevokedTokens>,
}

#[derive(Deserialize)]
struct RevokedTokens {
    #[serde(default)]
    bot: Vec<String>,
}

#[derive(Deserialize)]
struct Authorization {
    team_id: Option<String>,
    enterprise_id: Option<String>,
    /// Absent means the delivery does not say (decision 20), not `false`.
    is_enterprise_install: Option<bool>,
}

/// Parses an Events API body (`application/json`).
pub fn parse_events(
    content_type: Option<&str>,
    body: &[u8],
    delivery: Delivery,
) -> Result<Parsed, Rejection> {
    require_media_type(content_type, "application/json")?;
    let text = utf8(body)?;
    let envelope: Envelope = serde_json::from_str(text)
        .map_err(|_| Rejection::Malformed("body is not a valid Events API envelope"))?;

    match envelope.envelope_type.as_str() {
        "url_verification" => {
            let challenge =
                envelope.challenge.ok_or(Rejection::Malformed("url_verification without a challenge"))?;
            if challenge.is_empty() || challenge.len() > MAX_CHALLENGE_LEN {
                return Err(Rejection::Malformed("challenge is empty or too long"));
            }
            Ok(Parsed::UrlVerification { challenge })
        }
        "app_rate_limited" => Ok(Parsed::RateLimited {
            team_id: envelope.team_id.filter(|t| WorkspaceId::new(t.as_str()).is_ok()),
            minute_rate_limited: envelope.minute_rate_limited,
        }),
        "event_callback" => {
            let event_id = envelope
                .event_id
                .as_deref()
                .ok_or(Rejection::Malformed("event_callback without event_id"))?;
            let external_id = ExternalEventId::new(event_id)
                .map_err(|_| Rejection::Malformed("event_id is not a valid id"))?;
            let event_type = envelope
                .event
                .as_ref()
                .and_then(|e| e.event_type.as_deref())
                .ok_or(Rejection::Malformed("event_callback without event.type"))?;
            let event_type = Label::new("event type", event_type)
                .map_err(|_| Rejection::Malformed("event.type is not valid"))?;
            let workspace = installing_workspace(&envelope)?;
            let lifecycle = lifecycle(event_type.as_str(), envelope.event.as_ref());
            let kind = EventKind::Callback { event_type };
            let mut parsed =
                slack_event(workspace, kind, Some(external_id), delivery, Payload::from_json_text(text));
            if let Parsed::Event(event) = &mut parsed {
                event.lifecycle = lifecycle;
            }
            Ok(parsed)
        }
        _ => Err(Rejection::UnsupportedEnvelope),
    }
}

/// The app's own lifecycle events, applied once the agent has had them.
fn lifecycle(event_type: &str, event: Option<&InnerEvent>) -> Option<Lifecycle> {
    match event_type {
        "app_uninstalled" => Some(Lifecycle::Uninstalled),
        "tokens_revoked" => {
            let bot_user_ids =
                event.and_then(|e| e.tokens.as_ref()).map(|t| t.bot.clone()).unwrap_or_default();
            Some(Lifecycle::TokensRevoked { bot_user_ids })
        }
        _ => None,
    }
}

/// `authorizations[0]` names the installation; the top-level ids are the fallback.
fn installing_workspace(envelope: &Envelope) -> Result<WorkspaceRef, Rejection> {
    let (team, enterprise, org_wide) = match envelope.authorizations.first() {
        Some(auth) => (
            auth.team_id.as_deref().or(envelope.team_id.as_deref()),
            auth.enterprise_id.as_deref().or(envelope.enterprise_id.as_deref()),
            auth.is_enterprise_install,
        ),
        None => {
            (envelope.team_id.as_deref(), envelope.enterprise_id.as_deref(), envelope.is_enterprise_install)
        }
    };
    workspace(team, enterprise, org_wide)
}

// --- Slash commands ----------------------------------------------------------------------

/// Parses a slash command body (`application/x-www-form-urlencoded`). `ssl_check=1` is
/// Slack checking the certificate, not a command.
pub fn parse_command(
    content_type: Option<&str>,
    body: &[u8],
    delivery: Delivery,
) -> Result<Parsed, Rejection> {
    require_media_type(content_type, "application/x-www-form-urlencoded")?;
    utf8(body)?;
    let mut fields = serde_json::Map::new();
    for (name, value) in form_urlencoded::parse(body) {
        fields.insert(name.into_owned(), serde_json::Value::String(value.into_owned()));
    }
    let field = |name: &str| fields.get(name).and_then(|v| v.as_str()).filter(|v| !v.is_empty());

    if field("ssl_check") == Some("1") {
        return Ok(Parsed::SslCheck);
    }
    let command = field("command").ok_or(Rejection::Malformed("slash command without a command"))?;
    let command = Label::new("command", command).map_err(|_| Rejection::Malformed("command is not valid"))?;
    // `is_enterprise_install` is the string `true` or `false`; absent (or anything else), the
    // command does not say.
    let org_wide = match field("is_enterprise_install") {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let workspace = workspace(field("team_id"), field("enterprise_id"), org_wide)?;
    let payload = Payload::from_json_text(serde_json::Value::Object(fields.clone()).to_string());
    Ok(slack_event(workspace, EventKind::Command { command }, None, delivery, payload))
}

// --- Interactions ------------------------------------------------------------------------

#[derive(Deserialize)]
struct Interaction {
    #[serde(rename = "type")]
    interaction_type: Option<String>,
    team: Option<IdHolder>,
    enterprise: Option<IdHolder>,
    user: Option<User>,
    view: Option<View>,
    is_enterprise_install: Option<bool>,
}

#[derive(Deserialize)]
struct IdHolder {
    id: Option<String>,
}

#[derive(Deserialize)]
struct User {
    team_id: Option<String>,
}

#[derive(Deserialize)]
struct View {
    app_installed_team_id: Option<String>,
}

/// Parses an interaction body: a form with one field, `payload`, holding JSON.
pub fn parse_interaction(
    content_type: Option<&str>,
    body: &[u8],
    delivery: Delivery,
) -> Result<Parsed, Rejection> {
    require_media_type(content_type, "application/x-www-form-urlencoded")?;
    utf8(body)?;
    let payload = form_urlencoded::parse(body)
        .find(|(name, _)| name == "payload")
        .map(|(_, value)| value.into_owned())
        .ok_or(Rejection::Malformed("interaction without a payload field"))?;
    let interaction: Interaction = serde_json::from_str(&payload)
        .map_err(|_| Rejection::Malformed("payload is not a valid interaction"))?;
    let interaction_type =
        interaction.interaction_type.as_deref().ok_or(Rejection::Malformed("interaction without a type"))?;
    let interaction_type = Label::new("interaction type", interaction_type)
        .map_err(|_| Rejection::Malformed("interaction type is not valid"))?;

    // The installing team first (modals), then the team (null for org-wide installs), then
    // the acting user's team.
    let team = interaction
        .view
        .as_ref()
        .and_then(|v| v.app_installed_team_id.as_deref())
        .or(interaction.team.as_ref().and_then(|t| t.id.as_deref()))
        .or(interaction.user.as_ref().and_then(|u| u.team_id.as_deref()));
    let enterprise = interaction.enterprise.as_ref().and_then(|e| e.id.as_deref());
    let workspace = workspace(team, enterprise, interaction.is_enterprise_install)?;
    let kind = EventKind::Interaction { interaction_type };
    Ok(slack_event(workspace, kind, None, delivery, Payload::from_json_text(payload)))
}

// --- shared ------------------------------------------------------------------------------

fn slack_event(
    workspace: WorkspaceRef,
    kind: EventKind,
    external_id: Option<ExternalEventId>,
    delivery: Delivery,
    payload: Payload,
) -> Parsed {
    // The fingerprint of an unnumbered request comes from its verified signature, which the
    // caller holds (`Verified::fingerprint`).
    Parsed::Event(InboundEvent {
        platform: Platform::Slack,
        workspace,
        kind,
        external_id,
        delivery,
        payload,
        fingerprint: None,
        lifecycle: None,
    })
}

/// Builds the workspace reference ([`WorkspaceRef::delivered`] holds the org-wide rule);
/// `org_wide` is what the delivery says, `None` when it does not.
fn workspace(
    team: Option<&str>,
    enterprise: Option<&str>,
    org_wide: Option<bool>,
) -> Result<WorkspaceRef, Rejection> {
    let id = |raw: Option<&str>| -> Result<Option<WorkspaceId>, Rejection> {
        raw.filter(|s| !s.is_empty())
            .map(WorkspaceId::new)
            .transpose()
            .map_err(|_| Rejection::Malformed("workspace id is not valid"))
    };
    WorkspaceRef::delivered(id(team)?, id(enterprise)?, org_wide)
        .map_err(|_| Rejection::Malformed("no team or enterprise id"))
}

fn utf8(body: &[u8]) -> Result<&str, Rejection> {
    std::str::from_utf8(body).map_err(|_| Rejection::Malformed("body is not UTF-8"))
}

/// The media type must match, case-insensitively, ignoring parameters such as `charset`.
fn require_media_type(content_type: Option<&str>, expected: &str) -> Result<(), Rejection> {
    let essence = content_type.and_then(|ct| ct.split(';').next()).map(str::trim);
    match essence {
        Some(essence) if essence.eq_ignore_ascii_case(expected) => Ok(()),
        _ => Err(Rejection::UnsupportedMediaType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_ignore_case_and_parameters() {
        assert!(require_media_type(Some("Application/JSON; charset=utf-8"), "application/json").is_ok());
        assert!(require_media_type(Some("text/plain"), "application/json").is_err());
        assert!(require_media_type(None, "application/json").is_err());
    }

    #[test]
    fn a_challenge_is_one_to_256_bytes() {
        let envelope = |challenge: &str| {
            serde_json::json!({"type": "url_verification", "token": "t", "challenge": challenge}).to_string()
        };
        for (challenge, ok) in [("", false), ("c", true), (&"c".repeat(256), true), (&"c".repeat(257), false)]
        {
            let parsed =
                parse_events(Some("application/json"), envelope(challenge).as_bytes(), Delivery::default());
            assert_eq!(parsed.is_ok(), ok, "{} bytes", challenge.len());
        }
    }

    #[test]
    fn a_command_from_an_org_wide_install_is_named_by_its_enterprise() {
        let command = |org_wide: &str| {
            let body = format!(
                "command=%2Fweather&team_id=T1&enterprise_id=E1&is_enterprise_install={org_wide}&text=paris"
            );
            match parse_command(
                Some("application/x-www-form-urlencoded"),
                body.as_bytes(),
                Delivery::default(),
            ) {
                Ok(Parsed::Event(event)) => event.workspace,
                other => panic!("{other:?}"),
            }
        };
        assert!(command("true").is_enterprise_install());
        assert_eq!(command("true").team_id(), None);
        assert!(!command("false").is_enterprise_install());
        assert_eq!(command("false").team_id().map(|t| t.as_str()), Some("T1"));
        assert_eq!(command("false").scope(), doorman_domain::Scope::Team);
        assert_eq!(command("").scope(), doorman_domain::Scope::Unstated, "absent: the command does not say");
        assert_eq!(command("yes").scope(), doorman_domain::Scope::Unstated);
    }

    #[test]
    fn an_event_or_interaction_without_the_flag_does_not_say_which_install_it_is_for() {
        let event = r#"{"type":"event_callback","team_id":"T1","enterprise_id":"E1","event_id":"Ev1",
            "event":{"type":"app_mention","event_ts":"1"}}"#;
        let Ok(Parsed::Event(event)) =
            parse_events(Some("application/json"), event.as_bytes(), Delivery::default())
        else {
            panic!("an event")
        };
        assert_eq!(event.workspace.scope(), doorman_domain::Scope::Unstated);
        let authorized = r#"{"type":"event_callback","team_id":"T1","event_id":"Ev1",
            "authorizations":[{"team_id":"T1","enterprise_id":"E1","is_enterprise_install":false}],
            "event":{"type":"app_mention","event_ts":"1"}}"#;
        let Ok(Parsed::Event(event)) =
            parse_events(Some("application/json"), authorized.as_bytes(), Delivery::default())
        else {
            panic!("an event")
        };
        assert_eq!(event.workspace.scope(), doorman_domain::Scope::Team);
        let payload = r#"{"type":"block_actions","team":{"id":"T1"},"enterprise":{"id":"E1"}}"#;
        let body = form_urlencoded::Serializer::new(String::new()).append_pair("payload", payload).finish();
        let Ok(Parsed::Event(interaction)) = parse_interaction(
            Some("application/x-www-form-urlencoded"),
            body.as_bytes(),
            Delivery::default(),
        ) else {
            panic!("an interaction")
        };
        assert_eq!(interaction.workspace.scope(), doorman_domain::Scope::Unstated);
    }

    #[test]
    fn an_org_wide_install_drops_the_team() {
        let ws = workspace(Some("T1"), Some("E1"), Some(true)).unwrap();
        assert_eq!(ws.team_id(), None);
        assert!(ws.is_enterprise_install());
        // Claimed org-wide without an enterprise: read as a plain team.
        let ws = workspace(Some("T1"), None, Some(true)).unwrap();
        assert_eq!(ws.team_id().unwrap().as_str(), "T1");
    }
}

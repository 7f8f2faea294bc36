//! Each realistic fixture parses to the expected workspace, kind and event id.

use doorman_adapters::slack::{Parsed, Rejection, parse_command, parse_events, parse_interaction};
use doorman_domain::{Delivery, InboundEvent};

const JSON: Option<&str> = Some("application/json");
const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/slack/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An interaction fixture holds the JSON payload; Slack sends it form-encoded.
fn interaction_body(name: &str) -> Vec<u8> {
    let payload = String::from_utf8(fixture(name)).unwrap();
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", payload.trim())
        .finish()
        .into_bytes()
}

fn event(parsed: Result<Parsed, Rejection>) -> InboundEvent {
    match parsed {
        Ok(Parsed::Event(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// (team, enterprise, org-wide, kind name, label, event id)
type Expected =
    (Option<&'static str>, Option<&'static str>, bool, &'static str, &'static str, Option<&'static str>);

fn assert_event(name: &str, event: &InboundEvent, expected: Expected) {
    let (team, enterprise, org_wide, kind, label, event_id) = expected;
    assert_eq!(event.workspace.team_id().map(|t| t.as_str()), team, "{name}: team");
    assert_eq!(event.workspace.enterprise_id().map(|e| e.as_str()), enterprise, "{name}: enterprise");
    assert_eq!(event.workspace.is_enterprise_install(), org_wide, "{name}: org-wide");
    assert_eq!(event.kind.name(), kind, "{name}: kind");
    assert_eq!(event.kind.label().as_str(), label, "{name}: label");
    assert_eq!(event.external_id.as_ref().map(|id| id.as_str()), event_id, "{name}: event id");
}

#[test]
fn events_api_fixtures_parse_to_the_installing_workspace() {
    let cases: [(&str, Expected); 5] = [
        (
            "event_message.json",
            (Some("T0001ABCD"), None, false, "event_callback", "message", Some("Ev0MSG00001")),
        ),
        (
            "event_app_mention.json",
            (Some("T0001ABCD"), None, false, "event_callback", "app_mention", Some("Ev0MENTION1")),
        ),
        (
            "event_reaction_added.json",
            (
                Some("T061EG9RZ"),
                Some("E12345"),
                false,
                "event_callback",
                "reaction_added",
                Some("Ev9UQ52YNA"),
            ),
        ),
        // Shared channel: the top-level ids name the source organisation; the installing one wins.
        (
            "event_shared_channel.json",
            (
                Some("T_INSTALL1"),
                Some("E_INSTALL1"),
                false,
                "event_callback",
                "app_mention",
                Some("Ev0SHARED01"),
            ),
        ),
        // Org-wide install: named by the enterprise alone.
        (
            "event_org_wide_install.json",
            (None, Some("E0ORG0001"), true, "event_callback", "app_mention", Some("Ev0ORGWIDE1")),
        ),
    ];
    for (name, expected) in cases {
        let body = fixture(name);
        let parsed = event(parse_events(JSON, &body, Delivery::default()));
        assert_event(name, &parsed, expected);
        assert_eq!(
            parsed.payload.as_json_text().as_bytes(),
            &body[..],
            "{name}: the payload is forwarded untouched"
        );
    }
}

#[test]
fn url_verification_and_app_rate_limited_are_recognised() {
    assert_eq!(
        parse_events(JSON, &fixture("url_verification.json"), Delivery::default()),
        Ok(Parsed::UrlVerification {
            challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into()
        })
    );
    assert_eq!(
        parse_events(JSON, &fixture("app_rate_limited.json"), Delivery::default()),
        Ok(Parsed::RateLimited { team_id: Some("T123456".into()), minute_rate_limited: Some(1_518_467_820) })
    );
}

#[test]
fn a_slash_command_parses_with_its_fields_forwarded_as_json() {
    let parsed = event(parse_command(FORM, &fixture("command.form"), Delivery::default()));
    assert_event(
        "command.form",
        &parsed,
        (Some("T1DC2JH3J"), None, false, "slash_command", "/webhook-collect", None),
    );
    let payload: serde_json::Value = serde_json::from_str(parsed.payload.as_json_text()).unwrap();
    assert_eq!(payload["command"], "/webhook-collect");
    assert_eq!(payload["user_name"], "roadrunner");
    assert_eq!(payload["text"], "");
}

#[test]
fn an_ssl_check_is_recognised() {
    assert_eq!(parse_command(FORM, &fixture("ssl_check.form"), Delivery::default()), Ok(Parsed::SslCheck));
}

#[test]
fn every_interaction_type_parses() {
    let cases: [(&str, Expected); 11] = [
        (
            "interaction_block_actions.json",
            (Some("T0BLOCK01"), None, false, "interaction", "block_actions", None),
        ),
        (
            "interaction_shortcut.json",
            (Some("T0SHORT01"), Some("E0SHORT01"), false, "interaction", "shortcut", None),
        ),
        (
            "interaction_message_action.json",
            (Some("T0MSGACT1"), None, false, "interaction", "message_action", None),
        ),
        // A modal: the team that installed the app, not the user's.
        (
            "interaction_view_submission.json",
            (Some("T0INSTAL2"), Some("E0VIEWSU1"), false, "interaction", "view_submission", None),
        ),
        (
            "interaction_view_closed.json",
            (Some("T0CLOSED1"), None, false, "interaction", "view_closed", None),
        ),
        (
            "interaction_block_suggestion.json",
            (Some("T0SUGGES1"), None, false, "interaction", "block_suggestion", None),
        ),
        (
            "interaction_org_wide_shortcut.json",
            (None, Some("E0ORG0001"), true, "interaction", "shortcut", None),
        ),
        // Legacy types, still sent to apps that use message attachments and dialogs.
        (
            "interaction_legacy_interactive_message.json",
            (Some("T0LEGACY1"), None, false, "interaction", "interactive_message", None),
        ),
        (
            "interaction_legacy_dialog_submission.json",
            (Some("T0DIALOG1"), None, false, "interaction", "dialog_submission", None),
        ),
        (
            "interaction_legacy_dialog_cancellation.json",
            (Some("T0DIALOG1"), None, false, "interaction", "dialog_cancellation", None),
        ),
        (
            "interaction_legacy_dialog_suggestion.json",
            (Some("T0DIALOG1"), None, false, "interaction", "dialog_suggestion", None),
        ),
    ];
    for (name, expected) in cases {
        let parsed = event(parse_interaction(FORM, &interaction_body(name), Delivery::default()));
        assert_event(name, &parsed, expected);
        let original: serde_json::Value = serde_json::from_slice(&fixture(name)).unwrap();
        let forwarded: serde_json::Value = serde_json::from_str(parsed.payload.as_json_text()).unwrap();
        assert_eq!(forwarded, original, "{name}: the payload is forwarded as sent");
    }
}

#[test]
fn bad_bodies_get_typed_rejections() {
    let ok_envelope = fixture("event_message.json");
    assert_eq!(
        parse_events(Some("text/plain"), &ok_envelope, Delivery::default()),
        Err(Rejection::UnsupportedMediaType)
    );
    assert_eq!(
        parse_command(JSON, &fixture("command.form"), Delivery::default()),
        Err(Rejection::UnsupportedMediaType)
    );

    let malformed: [&[u8]; 6] = [
        b"{not json",
        br#"{"type":"event_callback","team_id":"T1","event":{"type":"message"}}"#,
        br#"{"type":"event_callback","team_id":"T1","event_id":"Ev1"}"#,
        br#"{"type":"event_callback","event_id":"Ev1","event":{"type":"message"}}"#,
        b"\xff\xfe{}",
        br#"{"type":"url_verification"}"#,
    ];
    for body in malformed {
        assert!(
            matches!(parse_events(JSON, body, Delivery::default()), Err(Rejection::Malformed(_))),
            "{body:?}"
        );
    }
    let long_id = format!(
        r#"{{"type":"event_callback","team_id":"T1","event_id":"{}","event":{{"type":"m"}}}}"#,
        "E".repeat(10_000)
    );
    assert!(matches!(
        parse_events(JSON, long_id.as_bytes(), Delivery::default()),
        Err(Rejection::Malformed(_))
    ));
    assert_eq!(
        parse_events(JSON, br#"{"type":"something_new"}"#, Delivery::default()),
        Err(Rejection::UnsupportedEnvelope)
    );
    assert!(matches!(
        parse_interaction(FORM, b"payload=%7Bnope", Delivery::default()),
        Err(Rejection::Malformed(_))
    ));
    assert!(matches!(parse_command(FORM, b"team_id=T1", Delivery::default()), Err(Rejection::Malformed(_))));
}

#[test]
fn the_apps_lifecycle_events_parse_to_what_must_be_applied_after_dispatch() {
    use doorman_domain::Lifecycle;
    let uninstalled = event(parse_events(JSON, &fixture("event_app_uninstalled.json"), Delivery::default()));
    assert_eq!(uninstalled.lifecycle, Some(Lifecycle::Uninstalled));
    assert_eq!(
        uninstalled.external_id.as_ref().map(|id| id.as_str()),
        Some("Ev0UNINSTALL"),
        "claimed like any event"
    );

    let revoked = event(parse_events(JSON, &fixture("event_tokens_revoked.json"), Delivery::default()));
    assert_eq!(
        revoked.lifecycle,
        Some(Lifecycle::TokensRevoked { bot_user_ids: vec!["U0LAN0Z89".into()] }),
        "only bot tokens matter: Doorman stores no user tokens"
    );

    let mention = event(parse_events(JSON, &fixture("event_app_mention.json"), Delivery::default()));
    assert_eq!(mention.lifecycle, None);
}

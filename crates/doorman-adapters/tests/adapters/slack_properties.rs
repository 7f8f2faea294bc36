//! Properties: no byte sequence panics verify or parse; ids survive the round trip.

use std::time::Duration;

use doorman_adapters::slack::{
    Parsed, SignatureHeaders, SigningSecret, Verifier, delivery_from_headers, parse_command, parse_events,
    parse_interaction,
};
use doorman_domain::Delivery;
use proptest::prelude::*;

fn content_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("application/json".to_owned())),
        Just(Some("application/x-www-form-urlencoded".to_owned())),
        any::<String>().prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_requests_never_panic_verify(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        timestamp in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..24)),
        signature in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..80)),
        now in any::<i64>(),
    ) {
        let v = Verifier::new(vec![SigningSecret::new("secret")], Duration::from_secs(300));
        let _ = v.verify(SignatureHeaders { timestamp: timestamp.as_deref(), signature: signature.as_deref() }, &body, now);
    }

    #[test]
    fn arbitrary_bodies_never_panic_parse(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        ct in content_type(),
        retry_num in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..24)),
        retry_reason in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
    ) {
        let delivery = delivery_from_headers(retry_num.as_deref(), retry_reason.as_deref());
        let _ = parse_events(ct.as_deref(), &body, delivery);
        let _ = parse_command(ct.as_deref(), &body, delivery);
        let _ = parse_interaction(ct.as_deref(), &body, delivery);
    }

    #[test]
    fn arbitrary_json_shaped_bodies_never_panic_parse(json in arbitrary_json()) {
        let body = json.to_string();
        let _ = parse_events(Some("application/json"), body.as_bytes(), Delivery::default());
        let form = form_urlencoded::Serializer::new(String::new()).append_pair("payload", &body).finish();
        let _ = parse_interaction(Some("application/x-www-form-urlencoded"), form.as_bytes(), Delivery::default());
    }

    #[test]
    fn an_envelope_built_from_valid_ids_parses_to_those_ids(
        team in "[A-Z0-9]{1,20}",
        enterprise in proptest::option::of("[A-Z0-9]{1,20}"),
        // Any printable id but `.` and `..`, which are refused on arrival (an event opens at a
        // URL with its id as one path segment).
        event_id in "[ -~]{1,255}".prop_filter("not . or ..", |id| id != "." && id != ".."),
        event_type in "[a-z_.]{1,40}",
        attempt in 0u32..4,
    ) {
        let body = serde_json::json!({
            "type": "event_callback",
            "team_id": "TSOURCE",
            "event_id": event_id,
            "event": {"type": event_type, "event_ts": "1.0"},
            "authorizations": [{"team_id": team, "enterprise_id": enterprise, "is_enterprise_install": false}],
        })
        .to_string();
        let delivery = delivery_from_headers(Some(attempt.to_string().as_bytes()), Some(b"http_timeout"));
        let Ok(Parsed::Event(event)) = parse_events(Some("application/json"), body.as_bytes(), delivery) else {
            panic!("a valid envelope must parse");
        };
        let parsed_id = event.external_id.clone().unwrap();
        prop_assert_eq!(parsed_id.as_str(), event_id.as_str());
        prop_assert_eq!(event.workspace.team_id().unwrap().as_str(), team.as_str());
        prop_assert_eq!(event.workspace.enterprise_id().map(|e| e.as_str().to_owned()), enterprise);
        prop_assert_eq!(event.kind.label().as_str(), event_type.as_str());
        prop_assert_eq!(event.delivery.attempt, attempt);
    }

    #[test]
    fn a_command_built_from_valid_ids_parses_to_those_ids(
        team in "[A-Z0-9]{1,20}",
        command in "/[a-z0-9_-]{1,30}",
        text in any::<String>(),
    ) {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("team_id", &team)
            .append_pair("command", &command)
            .append_pair("text", &text)
            .finish();
        let Ok(Parsed::Event(event)) = parse_command(Some("application/x-www-form-urlencoded"), body.as_bytes(), Delivery::default()) else {
            panic!("a valid command must parse");
        };
        prop_assert_eq!(event.workspace.team_id().unwrap().as_str(), team.as_str());
        prop_assert_eq!(event.kind.label().as_str(), command.as_str());
        let payload: serde_json::Value = serde_json::from_str(event.payload.as_json_text()).unwrap();
        prop_assert_eq!(payload["text"].as_str().unwrap(), text.as_str());
    }
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        prop_oneof![Just("event_callback".to_owned()), Just("url_verification".to_owned()), any::<String>()]
            .prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("team_id".to_owned()),
                    Just("event_id".to_owned()),
                    Just("event".to_owned()),
                    Just("authorizations".to_owned()),
                    Just("enterprise_id".to_owned()),
                    Just("team".to_owned()),
                    Just("view".to_owned()),
                    Just("user".to_owned()),
                    any::<String>()
                ],
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

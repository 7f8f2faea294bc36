//! A kept Events API body as an operator may read it. Slack puts the app's verification token
//! (`token`, deprecated, the same for every workspace of the app) at the top of every
//! envelope: a credential of the deployment's Slack app, not a customer's content, so it is
//! redacted before anyone sees the body. Everything else is shown as Slack sent it, in its
//! order.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// What a redacted `token` reads as.
pub const REDACTED: &str = "… (redacted)";

/// The top-level members a shown body never carries as sent: Slack's verification token.
const SECRET_MEMBERS: [&str; 1] = ["token"];

/// `body` (an Events API envelope, as kept) with its secrets redacted. A body that is not a
/// JSON object has no top-level member to redact and is returned as it is.
pub fn shown_payload(body: &str) -> String {
    let Ok(Members(mut members)) = serde_json::from_str::<Members>(body) else { return body.to_owned() };
    let mut redacted = false;
    for (name, value) in &mut members {
        if SECRET_MEMBERS.contains(&name.as_str()) {
            *value = RawValue::from_string(format!("\"{REDACTED}\"")).expect("a JSON string");
            redacted = true;
        }
    }
    if !redacted {
        return body.to_owned();
    }
    serde_json::to_string(&Members(members)).unwrap_or_else(|_| body.to_owned())
}

/// A JSON object's members in their order, each value as its own text (nothing re-encoded).
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

impl Serialize for Members {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verification_token_is_redacted_and_the_rest_kept_as_sent_in_its_order() {
        let body = r#"{"token":"XXYYZZ","team_id":"T1","event":{"type":"app_mention","text":"hi \u00e9 <@U1>","ts":"1.5"},"event_id":"Ev1","authorizations":[{"team_id":"T1"}]}"#;
        let shown = shown_payload(body);
        assert!(!shown.contains("XXYYZZ"), "{shown}");
        assert_eq!(
            shown,
            r#"{"token":"… (redacted)","team_id":"T1","event":{"type":"app_mention","text":"hi \u00e9 <@U1>","ts":"1.5"},"event_id":"Ev1","authorizations":[{"team_id":"T1"}]}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(parsed["event"]["text"], "hi é <@U1>");
    }

    #[test]
    fn a_body_without_a_token_or_that_is_no_object_is_shown_as_kept() {
        let body = "{ \"team_id\": \"T1\",\n  \"event\": {} }";
        assert_eq!(shown_payload(body), body, "nothing to redact: untouched, spacing and all");
        assert_eq!(shown_payload("[1,2]"), "[1,2]");
        assert_eq!(shown_payload("not json"), "not json");
    }

    #[test]
    fn every_fixture_envelope_loses_its_token_and_nothing_else() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slack");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let body = std::fs::read_to_string(&path).unwrap();
            let Ok(mut kept) = serde_json::from_str::<serde_json::Value>(&body) else { continue };
            let shown: serde_json::Value = serde_json::from_str(&shown_payload(&body)).unwrap();
            if let Some(token) = kept.get_mut("token") {
                *token = serde_json::Value::String(REDACTED.into());
            }
            assert_eq!(shown, kept, "{}", path.display());
        }
    }
}

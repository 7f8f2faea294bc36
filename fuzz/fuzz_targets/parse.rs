//! Arbitrary bodies, content types and retry headers through the three parsers: never a
//! panic, and whatever parses has a valid workspace and kind.
#![no_main]

use doorman_adapters::slack::{Parsed, delivery_from_headers, parse_command, parse_events, parse_interaction};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (headers, body) = data.split_at(data.len().min(8));
    let delivery = delivery_from_headers(Some(headers), Some(headers));
    for content_type in ["application/json", "application/x-www-form-urlencoded"] {
        for parsed in [
            parse_events(Some(content_type), body, delivery),
            parse_command(Some(content_type), body, delivery),
            parse_interaction(Some(content_type), body, delivery),
        ] {
            if let Ok(Parsed::Event(event)) = parsed {
                assert!(event.workspace.team_id().is_some() || event.workspace.enterprise_id().is_some());
                assert!(!event.kind.label().as_str().is_empty());
            }
        }
    }
});

//! Verify + parse of a realistic 4 KiB Events API delivery, the work done on every request
//! before the database is touched. Run: `cargo bench -p doorman-adapters --bench slack`.

use std::time::Duration;

use divan::{Bencher, black_box};
use doorman_adapters::slack::{
    SignatureHeaders, SigningSecret, Verifier, delivery_from_headers, parse_events,
};
use doorman_testkit::slack::sign;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const NOW: i64 = 1_700_000_000;

fn main() {
    divan::main();
}

/// An `app_mention` envelope padded with message text to `size` bytes.
fn event_body(size: usize) -> Vec<u8> {
    let skeleton = serde_json::json!({
        "token": "XXYYZZ", "team_id": "T0001ABCD", "api_app_id": "A0MDYCDME",
        "event": {"type": "app_mention", "user": "U061F7AUR", "text": "", "ts": "1515449522.000016",
                  "channel": "C0LAN2Q65", "event_ts": "1515449522.000016"},
        "type": "event_callback", "event_id": "Ev0MENTION1", "event_time": 1515449522,
        "authorizations": [{"enterprise_id": null, "team_id": "T0001ABCD", "user_id": "U0LAN0Z89",
                            "is_bot": true, "is_enterprise_install": false}],
        "is_ext_shared_channel": false
    });
    let padding = size.saturating_sub(skeleton.to_string().len());
    let mut body = skeleton;
    body["event"]["text"] =
        serde_json::Value::String("lorem ipsum ".repeat(padding / 12 + 1)[..padding].to_owned());
    body.to_string().into_bytes()
}

#[divan::bench(args = [1024, 4096, 16384])]
fn verify_and_parse(bencher: Bencher, size: usize) {
    let body = event_body(size);
    let signature = sign(SECRET, NOW, &body);
    let timestamp = NOW.to_string();
    let verifier = Verifier::new(vec![SigningSecret::new(SECRET)], Duration::from_secs(300));
    bencher.counter(divan::counter::BytesCount::new(body.len())).bench(|| {
        let headers =
            SignatureHeaders { timestamp: Some(timestamp.as_bytes()), signature: Some(signature.as_bytes()) };
        verifier.verify(headers, black_box(&body), NOW).unwrap();
        let delivery = delivery_from_headers(Some(b"1"), Some(b"http_timeout"));
        black_box(parse_events(Some("application/json"), black_box(&body), delivery).unwrap())
    });
}

#[divan::bench(args = [4096])]
fn verify_only(bencher: Bencher, size: usize) {
    let body = event_body(size);
    let signature = sign(SECRET, NOW, &body);
    let timestamp = NOW.to_string();
    let verifier = Verifier::new(vec![SigningSecret::new(SECRET)], Duration::from_secs(300));
    bencher.bench(|| {
        let headers =
            SignatureHeaders { timestamp: Some(timestamp.as_bytes()), signature: Some(signature.as_bytes()) };
        verifier.verify(headers, black_box(&body), NOW).unwrap()
    });
}

#[divan::bench(args = [4096])]
fn parse_only(bencher: Bencher, size: usize) {
    let body = event_body(size);
    bencher.bench(|| {
        black_box(parse_events(Some("application/json"), black_box(&body), Default::default()).unwrap())
    });
}

//! Arbitrary header values and bodies through signature verification: never a panic, and
//! nothing verifies without the secret.
#![no_main]

use std::time::Duration;

use doorman_adapters::slack::{SignatureHeaders, SigningSecret, Verifier};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Split the input into timestamp, signature and body at the first two 0xff bytes.
    let mut parts = data.splitn(3, |b| *b == 0xff);
    let timestamp = parts.next();
    let signature = parts.next();
    let body = parts.next().unwrap_or_default();
    let verifier = Verifier::new(vec![SigningSecret::new("fuzz-secret")], Duration::from_secs(300));
    // Judge each input at its own timestamp when it has one, so the fuzzer reaches the HMAC
    // comparison instead of stopping at the staleness check.
    let now = timestamp
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(1_700_000_000);
    let result = verifier.verify(SignatureHeaders { timestamp, signature }, body, now);
    assert!(result.is_err(), "a random input verified");
});

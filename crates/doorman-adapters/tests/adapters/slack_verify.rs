//! Signature verification with Slack's official test vector.

use std::time::Duration;

use doorman_adapters::slack::{Rejection, SignatureHeaders, SignatureProblem, SigningSecret, Verifier};
use doorman_testkit::slack::sign;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TIMESTAMP: &str = "1531420618";
const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const NOW: i64 = 1_531_420_618;

fn verifier(secrets: &[&str]) -> Verifier {
    Verifier::new(secrets.iter().map(|s| SigningSecret::new(s)).collect(), Duration::from_secs(300))
}

fn check(v: &Verifier, timestamp: &[u8], signature: &[u8], body: &[u8], now: i64) -> Result<(), Rejection> {
    v.verify(SignatureHeaders { timestamp: Some(timestamp), signature: Some(signature) }, body, now).map(drop)
}

#[test]
fn a_verified_request_has_one_fingerprint_whatever_the_case_of_its_signature() {
    let v = verifier(&[SECRET]);
    let upper = SIGNATURE.replacen("v0=", "", 1).to_uppercase();
    let upper = format!("v0={upper}");
    fn headers(signature: &[u8]) -> SignatureHeaders<'_> {
        SignatureHeaders { timestamp: Some(TIMESTAMP.as_bytes()), signature: Some(signature) }
    }
    let lower = v.verify(headers(SIGNATURE.as_bytes()), BODY.as_bytes(), NOW).unwrap().fingerprint();
    let from_upper = v.verify(headers(upper.as_bytes()), BODY.as_bytes(), NOW).unwrap().fingerprint();
    assert_eq!(lower, from_upper, "a replay cannot dodge the record by changing case");
    assert_eq!(lower.signature(), SIGNATURE);
    assert_eq!(lower.expires_at().timestamp(), NOW + 300, "kept until the signature would be stale anyway");
}

#[test]
fn the_official_test_vector_verifies() {
    check(&verifier(&[SECRET]), TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), BODY.as_bytes(), NOW).unwrap();
    assert_eq!(sign(SECRET, NOW, BODY.as_bytes()), SIGNATURE);
}

#[test]
fn changing_any_byte_of_the_body_fails() {
    let v = verifier(&[SECRET]);
    for i in 0..BODY.len() {
        let mut body = BODY.as_bytes().to_vec();
        body[i] ^= 0x01;
        assert!(check(&v, TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), &body, NOW).is_err(), "body byte {i}");
    }
    let mut longer = BODY.as_bytes().to_vec();
    longer.push(b'&');
    assert!(check(&v, TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), &longer, NOW).is_err());
}

#[test]
fn changing_any_byte_of_the_timestamp_fails() {
    let v = verifier(&[SECRET]);
    for i in 0..TIMESTAMP.len() {
        let mut ts = TIMESTAMP.as_bytes().to_vec();
        ts[i] = if ts[i] == b'9' { b'0' } else { ts[i] + 1 };
        // Judged at its own time, so only the signature can fail it.
        let now: i64 = std::str::from_utf8(&ts).unwrap().parse().unwrap();
        let result = check(&v, &ts, SIGNATURE.as_bytes(), BODY.as_bytes(), now);
        assert_eq!(result, Err(Rejection::Signature(SignatureProblem::Mismatch)), "timestamp byte {i}");
    }
}

#[test]
fn changing_any_byte_of_the_signature_fails() {
    let v = verifier(&[SECRET]);
    for i in 0..SIGNATURE.len() {
        let mut sig = SIGNATURE.as_bytes().to_vec();
        sig[i] = match sig[i] {
            b'0'..=b'8' | b'a'..=b'e' => sig[i] + 1,
            b'9' => b'a',
            b'f' => b'0',
            other => other ^ 0x01,
        };
        assert!(check(&v, TIMESTAMP.as_bytes(), &sig, BODY.as_bytes(), NOW).is_err(), "signature byte {i}");
    }
    let truncated = &SIGNATURE.as_bytes()[..SIGNATURE.len() - 2];
    assert_eq!(
        check(&v, TIMESTAMP.as_bytes(), truncated, BODY.as_bytes(), NOW),
        Err(Rejection::Signature(SignatureProblem::MalformedSignature)),
        "a truncated signature is refused, not compared up to its length"
    );
}

#[test]
fn the_window_is_three_hundred_seconds_in_both_directions() {
    let v = verifier(&[SECRET]);
    let at = |now: i64| check(&v, TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), BODY.as_bytes(), now);
    assert_eq!(at(NOW + 301), Err(Rejection::Stale), "301 s in the past");
    assert_eq!(at(NOW - 301), Err(Rejection::Stale), "301 s in the future");
    assert!(at(NOW + 299).is_ok());
    assert!(at(NOW - 299).is_ok());
    assert!(at(NOW + 300).is_ok());
}

#[test]
fn both_secrets_pass_while_both_are_configured_and_a_removed_one_fails() {
    let new = "a-new-signing-secret-0123456789ab";
    let signed_with_new = sign(new, NOW, BODY.as_bytes());
    let both = verifier(&[SECRET, new]);
    check(&both, TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), BODY.as_bytes(), NOW).unwrap();
    check(&both, TIMESTAMP.as_bytes(), signed_with_new.as_bytes(), BODY.as_bytes(), NOW).unwrap();

    let rotated = verifier(&[new]);
    assert_eq!(
        check(&rotated, TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), BODY.as_bytes(), NOW),
        Err(Rejection::Signature(SignatureProblem::Mismatch))
    );
    check(&rotated, TIMESTAMP.as_bytes(), signed_with_new.as_bytes(), BODY.as_bytes(), NOW).unwrap();
}

#[test]
fn missing_or_garbled_headers_are_rejected() {
    let v = verifier(&[SECRET]);
    let none = v.verify(
        SignatureHeaders { timestamp: None, signature: Some(SIGNATURE.as_bytes()) },
        BODY.as_bytes(),
        NOW,
    );
    assert_eq!(none, Err(Rejection::Signature(SignatureProblem::MissingHeaders)));
    let cases: [(&[u8], &[u8], SignatureProblem); 4] = [
        (b"15314206x8", SIGNATURE.as_bytes(), SignatureProblem::MalformedTimestamp),
        (
            TIMESTAMP.as_bytes(),
            b"v1=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
            SignatureProblem::UnsupportedVersion,
        ),
        (
            TIMESTAMP.as_bytes(),
            b"v0=not-hex-at-all-not-hex-at-all-not-hex-at-all-not-hex-at-all-zz",
            SignatureProblem::MalformedSignature,
        ),
        (
            TIMESTAMP.as_bytes(),
            b"a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
            SignatureProblem::MalformedSignature,
        ),
    ];
    for (ts, sig, problem) in cases {
        assert_eq!(check(&v, ts, sig, BODY.as_bytes(), NOW), Err(Rejection::Signature(problem)));
    }
    assert_eq!(
        check(&verifier(&[]), TIMESTAMP.as_bytes(), SIGNATURE.as_bytes(), BODY.as_bytes(), NOW),
        Err(Rejection::Signature(SignatureProblem::Mismatch)),
        "no secrets configured: nothing verifies"
    );
}

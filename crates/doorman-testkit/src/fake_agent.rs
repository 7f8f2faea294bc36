//! A fake agent for tests and the load generator: a real HTTP server on a random loopback
//! port that verifies each dispatch's Standard Webhooks signature, records it, and can be
//! told to hold requests (a gate) or to fail them.
//!
//! The signature check is written here independently of the bridge's signer, from the
//! specification, so a bug in the signer cannot be mirrored by the check.

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use tokio::sync::watch;

/// One dispatch the agent accepted.
#[derive(Debug, Clone)]
pub struct Received {
    pub webhook_id: String,
    pub external_event_id: Option<String>,
    pub kind: String,
    /// The whole document, or `Null` for an agent started with [`FakeAgent::start_counting`]
    /// (a load test keeps tens of thousands; it needs only the ids).
    pub document: serde_json::Value,
}

/// One correctly signed request as it arrived, before it was held or answered: every POST the
/// agent read whole, whatever it then answered (an error, or nothing if the sender gave up).
/// A test counts these by `webhook_id` to tell a second POST of one message from a second
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    pub webhook_id: String,
    pub webhook_timestamp: String,
    /// Its `webhook-signature` as received: a test holds operators' views of the request to
    /// never showing it.
    pub webhook_signature: String,
    /// The connection it came on (a re-send on a fresh connection has another port).
    pub peer: Option<SocketAddr>,
    /// Its place among every signed request the agent received, from 0.
    pub seq: usize,
    /// Which redelivery the document says it is (`delivery.redelivery`; 0 for a live delivery,
    /// and always 0 for an agent started with [`FakeAgent::start_counting`]).
    pub redelivery: u64,
}

/// The fields a counting agent reads from each document: a dispatch's `kind`, or an
/// operational webhook's `type` (the agent receives those too, in the tests of that webhook).
#[derive(serde::Deserialize)]
struct Summary {
    external_event_id: Option<String>,
    #[serde(alias = "type")]
    kind: String,
}

#[derive(Debug, Default)]
struct Recorded {
    accepted: Vec<Received>,
    bad_signatures: usize,
    /// Correctly signed requests, whatever was answered, in the order they came.
    arrivals: Vec<Arrival>,
}

#[derive(Debug)]
struct Shared {
    key: hmac::Key,
    recorded: Mutex<Recorded>,
    /// `true` while the gate is open. Requests wait for it before answering.
    gate: watch::Sender<bool>,
    /// The status to answer with (200 unless told otherwise).
    status: Mutex<u16>,
    /// Requests currently inside the handler (held at the gate or answering).
    in_flight: Mutex<usize>,
    /// The most there ever were at once.
    peak_in_flight: Mutex<usize>,
    keep_documents: bool,
}

/// A running fake agent. Stops when dropped.
#[derive(Debug)]
pub struct FakeAgent {
    url: String,
    shared: Arc<Shared>,
    server: actix_web::dev::ServerHandle,
}

impl FakeAgent {
    /// Starts an agent that accepts dispatches signed with `secret` (`whsec_…`) and keeps
    /// every document.
    pub fn start(secret: &str) -> Self {
        Self::start_with(secret, true)
    }

    /// Like [`FakeAgent::start`], keeping only each dispatch's ids.
    pub fn start_counting(secret: &str) -> Self {
        Self::start_with(secret, false)
    }

    fn start_with(secret: &str, keep_documents: bool) -> Self {
        let key_bytes = STANDARD
            .decode(secret.strip_prefix("whsec_").expect("a whsec_ secret"))
            .expect("a base64 secret");
        let shared = Arc::new(Shared {
            key: hmac::Key::new(hmac::HMAC_SHA256, &key_bytes),
            recorded: Mutex::default(),
            gate: watch::channel(true).0,
            status: Mutex::new(200),
            in_flight: Mutex::new(0),
            peak_in_flight: Mutex::new(0),
            keep_documents,
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}/dispatch", listener.local_addr().unwrap());
        let state = web::Data::from(shared.clone());
        let server = HttpServer::new(move || {
            App::new().app_data(state.clone()).route("/dispatch", web::post().to(receive))
        })
        .workers(2)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)
        .expect("listen")
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Self { url, shared, server: handle }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Holds every request until [`FakeAgent::open_gate`].
    pub fn close_gate(&self) {
        self.shared.gate.send_replace(false);
    }

    pub fn open_gate(&self) {
        self.shared.gate.send_replace(true);
    }

    /// Answer with this status from now on.
    pub fn answer_with(&self, status: u16) {
        *self.shared.status.lock().unwrap() = status;
    }

    /// Every dispatch accepted so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.recorded.lock().unwrap().accepted.clone()
    }

    pub fn count(&self) -> usize {
        self.shared.recorded.lock().unwrap().accepted.len()
    }

    /// Dispatches for one external event id.
    pub fn count_for(&self, external_event_id: &str) -> usize {
        let recorded = self.shared.recorded.lock().unwrap();
        recorded.accepted.iter().filter(|r| r.external_event_id.as_deref() == Some(external_event_id)).count()
    }

    /// Requests that failed the signature check (answered 401).
    pub fn bad_signatures(&self) -> usize {
        self.shared.recorded.lock().unwrap().bad_signatures
    }

    /// Correctly signed requests received, whatever they were answered.
    pub fn requests(&self) -> usize {
        self.shared.recorded.lock().unwrap().arrivals.len()
    }

    /// Every correctly signed request received, whatever it was answered, in arrival order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.shared.recorded.lock().unwrap().arrivals.clone()
    }

    /// Requests currently being held or answered.
    pub fn in_flight(&self) -> usize {
        *self.shared.in_flight.lock().unwrap()
    }

    /// The most requests ever held or answered at once.
    pub fn peak_in_flight(&self) -> usize {
        *self.shared.peak_in_flight.lock().unwrap()
    }

    /// Waits until `predicate` holds, or panics after `timeout`.
    pub async fn wait_until(&self, what: &str, timeout: Duration, predicate: impl Fn(&Self) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        while !predicate(self) {
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        self.open_gate();
        drop(self.server.stop(false));
    }
}

async fn receive(request: HttpRequest, body: web::Bytes, shared: web::Data<Shared>) -> HttpResponse {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (Some(id), Some(timestamp), Some(signatures)) =
        (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"))
    else {
        shared.recorded.lock().unwrap().bad_signatures += 1;
        return HttpResponse::BadRequest().body("missing webhook headers");
    };
    let signed = [id.as_bytes(), b".", timestamp.as_bytes(), b".", &body].concat();
    let expected = STANDARD.encode(hmac::sign(&shared.key, &signed).as_ref());
    // The header may carry several space-separated signatures; any v1 match verifies.
    let verified = signatures.split(' ').any(|s| s.strip_prefix("v1,") == Some(expected.as_str()));
    if !verified {
        shared.recorded.lock().unwrap().bad_signatures += 1;
        return HttpResponse::Unauthorized().body("bad signature");
    }

    {
        let mut recorded = shared.recorded.lock().unwrap();
        let seq = recorded.arrivals.len();
        // Read only by an agent that keeps documents (a counting one, in a load test, saves it).
        let redelivery = if shared.keep_documents {
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|document| document["delivery"]["redelivery"].as_u64())
                .unwrap_or(0)
        } else {
            0
        };
        recorded.arrivals.push(Arrival {
            webhook_id: id.clone(),
            webhook_timestamp: timestamp,
            webhook_signature: signatures,
            peer: request.peer_addr(),
            seq,
            redelivery,
        });
    }
    {
        let mut in_flight = shared.in_flight.lock().unwrap();
        *in_flight += 1;
        let mut peak = shared.peak_in_flight.lock().unwrap();
        *peak = (*peak).max(*in_flight);
    }
    let mut gate = shared.gate.subscribe();
    let _ = gate.wait_for(|open| *open).await;
    let status = *shared.status.lock().unwrap();
    if status == 200 {
        let Ok(summary) = serde_json::from_slice::<Summary>(&body) else {
            *shared.in_flight.lock().unwrap() -= 1;
            return HttpResponse::BadRequest().body("not a dispatch document");
        };
        let document = if shared.keep_documents {
            serde_json::from_slice(&body).unwrap_or_default()
        } else {
            serde_json::Value::Null
        };
        let received = Received {
            webhook_id: id,
            external_event_id: summary.external_event_id,
            kind: summary.kind,
            document,
        };
        shared.recorded.lock().unwrap().accepted.push(received);
    }
    *shared.in_flight.lock().unwrap() -= 1;
    let mut answer = HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap_or_default());
    if status >= 400 {
        // An error answer says why, as agents' do: what Doorman keeps of it is the attempt's.
        return answer
            .content_type("application/json")
            .body(format!("{{\"error\":\"the agent answered {status}\"}}"));
    }
    answer.finish()
}

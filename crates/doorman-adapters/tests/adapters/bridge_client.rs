//! The dispatch client against agents that answer exactly as scripted, byte for byte, over
//! real loopback connections: framings, kept-alive connections, and what a failure means.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use doorman_adapters::bridge::DestinationPolicy;
use doorman_adapters::bridge::client::{DispatchClient, Post, SendError, Status};
use doorman_domain::FailureKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;

/// What the scripted agent does with one request.
#[derive(Clone)]
enum Step {
    /// Writes these bytes and keeps the connection.
    Answer(&'static [u8]),
    /// Writes these bytes, then closes.
    AnswerAndClose(&'static [u8]),
    /// Closes without answering.
    Hangup,
}

/// An agent on a random loopback port that plays `script`, one step per request, on whatever
/// connection the request comes on; it counts connections and whole requests.
struct ScriptedAgent {
    url: Url,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl ScriptedAgent {
    async fn start(script: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}/dispatch?v=1", listener.local_addr().unwrap())).unwrap();
        let (connections, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let (counted, recorded) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let (script, recorded) = (script.clone(), recorded.clone());
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    loop {
                        let Some(request) = read_request(&mut stream, &mut buffer).await else { return };
                        recorded.lock().unwrap().push(request);
                        let step = script.lock().unwrap().next();
                        match step {
                            Some(Step::Answer(bytes)) => stream.write_all(bytes).await.unwrap(),
                            Some(Step::AnswerAndClose(bytes)) => {
                                stream.write_all(bytes).await.unwrap();
                                return;
                            }
                            Some(Step::Hangup) | None => return,
                        }
                    }
                });
            }
        });
        Self { url, connections, requests }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// One whole request (head and `content-length` body) as text, or `None` once the client
/// closed.
async fn read_request(stream: &mut tokio::net::TcpStream, buffer: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                let request = String::from_utf8_lossy(&buffer[..end + 4 + length]).into_owned();
                buffer.drain(..end + 4 + length);
                return Some(request);
            }
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn client() -> DispatchClient {
    DispatchClient::new(DestinationPolicy { allow_private: true }, Duration::from_secs(2), 8, &[]).unwrap()
}

async fn post(client: &DispatchClient, url: &Url, body: &'static [u8]) -> Result<Status, SendError> {
    let headers = [("webhook-id", "evt_Ev1"), ("webhook-timestamp", "1700000000")];
    client.post(&Post { url, headers: &headers, body }, 64 * 1024).await
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

#[tokio::test]
async fn dispatches_share_one_kept_alive_connection_and_carry_the_documented_request() {
    let agent = ScriptedAgent::start(vec![Step::Answer(OK); 5]).await;
    let client = client();
    for _ in 0..5 {
        assert_eq!(
            post(&client, &agent.url, br#"{"version":1}"#).await,
            Ok(Status { code: 200, excerpt: None })
        );
    }
    assert_eq!(agent.connections(), 1, "one connection, kept alive");
    let request = &agent.requests()[0];
    let port = agent.url.port().unwrap();
    assert!(
        request.starts_with(&format!("POST /dispatch?v=1 HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n")),
        "{request}"
    );
    for header in ["content-type: application/json\r\n", "content-length: 13\r\n", "webhook-id: evt_Ev1\r\n"]
    {
        assert!(request.contains(header), "{header:?} in {request}");
    }
    assert!(request.ends_with("\r\n\r\n{\"version\":1}"), "{request}");
}

#[tokio::test]
async fn every_framing_of_an_answer_is_read_to_its_end() {
    let agent = ScriptedAgent::start(vec![
        Step::Answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"),
        Step::Answer(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4;x=y\r\nwiki\r\n5\r\npedia\r\n0\r\nx-trailer: 1\r\n\r\n"),
        Step::Answer(b"HTTP/1.1 204 No Content\r\n\r\n"),
        Step::Answer(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\noops!"),
        Step::AnswerAndClose(b"HTTP/1.1 200 OK\r\n\r\nuntil the agent closes"),
    ])
    .await;
    let client = client();
    let statuses: Vec<u16> = {
        let mut statuses = Vec::new();
        for _ in 0..5 {
            statuses.push(post(&client, &agent.url, b"{}").await.unwrap().code);
        }
        statuses
    };
    assert_eq!(statuses, [202, 200, 204, 500, 200]);
    assert_eq!(agent.connections(), 1, "each answer was read to its end, so the next reused the connection");
}

#[tokio::test]
async fn an_answer_that_closes_the_connection_is_not_reused_and_a_stale_idle_one_is_never_written_on() {
    let agent = ScriptedAgent::start(vec![
        Step::AnswerAndClose(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"),
        // Kept alive as far as the answer says, then closed by the agent while idle.
        Step::AnswerAndClose(OK),
        Step::Answer(OK),
    ])
    .await;
    let client = client();
    assert_eq!(post(&client, &agent.url, b"{}").await, Ok(Status { code: 200, excerpt: None }));
    assert_eq!(
        post(&client, &agent.url, b"{}").await,
        Ok(Status { code: 200, excerpt: None }),
        "a new connection"
    );
    tokio::time::sleep(Duration::from_millis(100)).await; // the agent's close arrives
    assert_eq!(
        post(&client, &agent.url, b"{}").await,
        Ok(Status { code: 200, excerpt: None }),
        "another new connection"
    );
    assert_eq!(agent.connections(), 3);
    assert_eq!(agent.requests().len(), 3, "nothing was written on a closed connection");
}

#[tokio::test]
async fn an_agent_that_hangs_up_after_the_request_may_have_it_so_that_is_interrupted() {
    let agent = ScriptedAgent::start(vec![Step::Hangup]).await;
    let error = post(&client(), &agent.url, b"{}").await.unwrap_err();
    assert!(matches!(error, SendError::Interrupted(_)), "{error:?}");
    assert_eq!(agent.requests().len(), 1, "the request reached the agent");
}

#[tokio::test]
async fn a_refused_connection_sent_nothing_and_a_private_address_is_refused_by_default() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = Url::parse(&format!("http://{closed}/dispatch")).unwrap();
    assert!(matches!(post(&client(), &url, b"{}").await, Err(SendError::Connect(FailureKind::Refused, _))));

    let agent = ScriptedAgent::start(vec![Step::Answer(OK)]).await;
    let strict = DispatchClient::new(DestinationPolicy::default(), Duration::from_secs(2), 8, &[]).unwrap();
    assert!(matches!(post(&strict, &agent.url, b"{}").await, Err(SendError::NotAllowed(_))));
    assert_eq!(agent.connections(), 0, "nothing was connected to");
}

#[tokio::test]
async fn an_answer_too_large_or_malformed_ends_its_connection() {
    let agent = ScriptedAgent::start(vec![
        Step::Answer(b"HTTP/1.1 200 OK\r\ncontent-length: 999999999\r\n\r\n"),
        Step::Answer(b"not http at all\r\n\r\n"),
        Step::Answer(OK),
    ])
    .await;
    let client = client();
    assert_eq!(
        post(&client, &agent.url, b"{}").await,
        Ok(Status { code: 200, excerpt: None }),
        "the status is what counts"
    );
    assert!(matches!(post(&client, &agent.url, b"{}").await, Err(SendError::Interrupted(_))));
    assert_eq!(post(&client, &agent.url, b"{}").await, Ok(Status { code: 200, excerpt: None }));
    assert_eq!(agent.connections(), 3, "neither connection was reused after its answer");
}

/// An https agent for `localhost` with a certificate of its own (not in the platform's store).
async fn tls_agent() -> (Url, Vec<u8>) {
    doorman_adapters::outbound::install_crypto_provider();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let der = certified.cert.der().to_vec();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone().into()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url =
        Url::parse(&format!("https://localhost:{}/dispatch", listener.local_addr().unwrap().port())).unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut buffer = Vec::new();
                loop {
                    let mut chunk = [0u8; 4096];
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                    }
                    if buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.ends_with(b"{}") {
                        buffer.clear();
                        if tls.write_all(OK).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, der)
}

#[tokio::test]
async fn https_verifies_the_agents_certificate_and_names_its_host() {
    let (url, root) = tls_agent().await;
    let trusting =
        DispatchClient::new(DestinationPolicy { allow_private: true }, Duration::from_secs(2), 8, &[root])
            .unwrap();
    assert_eq!(post(&trusting, &url, b"{}").await, Ok(Status { code: 200, excerpt: None }));
    assert_eq!(
        post(&trusting, &url, b"{}").await,
        Ok(Status { code: 200, excerpt: None }),
        "over the kept connection"
    );

    let error = post(&client(), &url, b"{}").await.unwrap_err();
    match error {
        SendError::Connect(kind, reason) => {
            assert!(kind == FailureKind::Tls && reason.contains("TLS"), "{reason}")
        }
        other => panic!("an untrusted certificate must fail before anything is sent: {other:?}"),
    }
}

/// A non-2xx answer's body is kept, its first KiB, whatever its framing: by length, chunked,
/// until the agent closes, and from a body too long to read whole (what had arrived with the
/// head). Cut at 1 KiB, a two-byte character split by the cut is dropped, not shown as `�`.
#[tokio::test]
async fn an_error_answers_first_kib_is_kept_whatever_its_framing() {
    const LONG: &[u8] = concat!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 1201\r\n\r\n",
        "a",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
        "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
    )
    .as_bytes();
    let agent = ScriptedAgent::start(vec![
        Step::Answer(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\noops!"),
        Step::Answer(b"HTTP/1.1 502 Bad Gateway\r\ntransfer-encoding: chunked\r\n\r\n3\r\nbad\r\n8\r\n gateway\r\n0\r\n\r\n"),
        Step::Answer(LONG),
        Step::Answer(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 999999999\r\n\r\nthe start"),
        Step::AnswerAndClose(b"HTTP/1.1 500 Internal Server Error\r\n\r\nuntil the agent closes"),
    ])
    .await;
    let client = client();
    let mut excerpts = Vec::new();
    for _ in 0..5 {
        excerpts.push(post(&client, &agent.url, b"{}").await.unwrap().excerpt);
    }
    let long = format!("a{}", "é".repeat(511));
    assert_eq!(long.len(), 1_023, "the cut at 1,024 bytes fell inside the 512th é");
    assert_eq!(
        excerpts,
        [
            Some("oops!".to_owned()),
            Some("bad gateway".to_owned()),
            Some(long),
            Some("the start".to_owned()),
            Some("until the agent closes".to_owned()),
        ]
    );
}

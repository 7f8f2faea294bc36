//! The dispatch client: one HTTP/1.1 POST to an agent over a kept-alive connection, and its
//! status. Written for what a dispatch needs and nothing more.
//!
//! Why not a general-purpose client: a dispatch was ~40% of Doorman's CPU per event under load
//! (issue 24). A general client drives each connection from a task of its own and hands every
//! request to it over a channel, builds a URL, a header map and a redirect policy per request,
//! and keeps its pool behind locks and timers. Here the dispatch's own task writes the request
//! and reads the answer on a connection it takes from a pool and puts back: one write and
//! usually one read per dispatch.
//!
//! What it does:
//! - Connections per origin (scheme, host, port), idle ones kept for [`IDLE_FOR`], at most
//!   `max_idle` per origin. One taken from the pool is first checked: a connection the agent
//!   closed while idle is dropped before anything is written on it.
//! - `https` through rustls with the platform's certificate verifier (as the Slack client),
//!   SNI from the URL's host. `http` only where the destination policy allows it.
//! - The host is resolved here and, unless private destinations are allowed, only public
//!   addresses are connected to ([`super::destination`]).
//! - The answer's body is read, up to a limit, and discarded so the connection can be reused:
//!   `content-length`, `chunked`, or until the agent closes. Informational (1xx) answers are
//!   skipped.
//!
//! What a failure means is what the bridge's retry rule needs ([`SendError`]): nothing was
//! sent (no connection could be made), or the request was written, or partly written, and no
//! whole answer came back, so the agent may have it and it must not be sent again.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use url::Url;

use doorman_domain::{FailureKind, MAX_ANSWER_EXCERPT, answer_excerpt};

use super::destination::{DestinationPolicy, NotAllowed, is_public};
use super::request::{METHOD, framing, host_header};

/// How long an idle connection is kept. Under most servers' own idle timeouts (nginx: 75 s,
/// Node: 5 s is the outlier, and a stale one is detected before use anyway).
pub const IDLE_FOR: Duration = Duration::from_secs(30);

/// The longest answer head (status line and headers) read.
const MAX_HEAD: usize = 16 * 1024;

/// Why a request got no status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// No connection could be made (DNS, refused, TLS handshake, connect timeout): nothing was
    /// sent, so sending again cannot deliver twice. The kind says which, for the attempt's record.
    Connect(FailureKind, String),
    /// The host resolves only to addresses the destination policy refuses: nothing was sent.
    NotAllowed(NotAllowed),
    /// The request was written, or partly written, and no whole answer head came back: the
    /// agent may have it.
    Interrupted(String),
    /// A header value holds a line break or another control character: nothing was sent
    /// (writing it would let the value add headers of its own).
    InvalidHeader(&'static str),
}

/// An origin's identity in the pool.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Origin {
    tls: bool,
    host: String,
    port: u16,
}

impl Origin {
    fn of(url: &Url) -> Result<Self, SendError> {
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => {
                return Err(SendError::Connect(
                    FailureKind::NotAllowed,
                    "the agent URL is neither http nor https".into(),
                ));
            }
        };
        let host = url
            .host_str()
            .ok_or_else(|| SendError::Connect(FailureKind::Dns, "the agent URL has no host".into()))?;
        let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
        Ok(Self { tls, host: host.to_owned(), port })
    }

    /// The `host` header: the host, and the port unless it is the scheme's own.
    fn host_header(&self) -> String {
        host_header(&self.host, self.port, self.tls)
    }

    /// The host as DNS and SNI want it: IPv6 literals without brackets.
    fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }
}

/// A connection: TCP, or TLS over TCP.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(tcp) => tcp,
            Stream::Tls(tls) => tls.get_ref().0,
        }
    }

    async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Plain(tcp) => tcp.write_all(bytes).await,
            Stream::Tls(tls) => {
                tls.write_all(bytes).await?;
                tls.flush().await
            }
        }
    }

    async fn read_buf(&mut self, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
        match self {
            Stream::Plain(tcp) => read_into(tcp, buffer).await,
            Stream::Tls(tls) => read_into(tls.as_mut(), buffer).await,
        }
    }
}

async fn read_into(stream: &mut (impl AsyncRead + Unpin), buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut chunk = [0u8; 8192];
    let n = stream.read(&mut chunk).await?;
    buffer.extend_from_slice(&chunk[..n]);
    Ok(n)
}

struct Connection {
    stream: Stream,
    /// Bytes read and not yet consumed.
    buffer: Vec<u8>,
    idle_since: Instant,
}

impl Connection {
    /// Whether an idle connection can still carry a request: not kept too long, and the agent
    /// has neither closed it nor sent anything unasked.
    fn still_open(&self, now: Instant) -> bool {
        if now.saturating_duration_since(self.idle_since) >= IDLE_FOR || !self.buffer.is_empty() {
            return false;
        }
        let mut probe = [0u8; 1];
        matches!(self.stream.tcp().try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

/// The client. Cheap to share: one per bridge.
pub struct DispatchClient {
    idle: Mutex<HashMap<Origin, Vec<Connection>>>,
    tls: TlsConnector,
    policy: DestinationPolicy,
    connect_timeout: Duration,
    max_idle: usize,
}

impl std::fmt::Debug for DispatchClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchClient").field("policy", &self.policy).finish_non_exhaustive()
    }
}

/// One request: the URL, extra headers (name, value) and the JSON body.
pub struct Post<'a> {
    pub url: &'a Url,
    pub headers: &'a [(&'static str, &'a str)],
    pub body: &'a [u8],
}

/// The URL may carry a token and the body is customer content: neither is printed.
impl std::fmt::Debug for Post<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Post").field("body_bytes", &self.body.len()).finish_non_exhaustive()
    }
}

/// What came back: the status, after the body was read (up to `max_answer` bytes), and for a
/// status that is not 2xx the first KiB of the body (a 2xx's body is read and dropped: a
/// success keeps nothing of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: u16,
    pub excerpt: Option<String>,
}

impl DispatchClient {
    /// `extra_roots`: certificates (DER) trusted besides the platform's, for agents behind a
    /// private CA (and the tests' own).
    pub fn new(
        policy: DestinationPolicy,
        connect_timeout: Duration,
        max_idle: usize,
        extra_roots: &[Vec<u8>],
    ) -> Result<Self, rustls::Error> {
        crate::outbound::install_crypto_provider();
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
        let roots = extra_roots.iter().map(|der| rustls::pki_types::CertificateDer::from(der.clone()));
        let verifier = if extra_roots.is_empty() {
            rustls_platform_verifier::Verifier::new(provider.clone())?
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider.clone())?
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Self {
            idle: Mutex::default(),
            tls: TlsConnector::from(Arc::new(config)),
            policy,
            connect_timeout,
            max_idle,
        })
    }

    /// Sends `post` and reads its answer, reading at most `max_answer` bytes of body. The
    /// caller bounds the whole of it in time.
    pub async fn post(&self, post: &Post<'_>, max_answer: usize) -> Result<Status, SendError> {
        let origin = Origin::of(post.url)?;
        let mut connection = match self.take_idle(&origin) {
            Some(connection) => connection,
            None => self.connect(&origin).await?,
        };
        let request = self.request_bytes(&origin, post)?;
        connection.stream.write_all(&request).await.map_err(|e| interrupted("writing the request", &e))?;
        let (status, body, reusable) = read_answer(&mut connection, max_answer)
            .await
            .map_err(|e| interrupted("reading the answer", &e))?;
        if reusable {
            self.put_idle(origin, connection);
        }
        Ok(Status { code: status, excerpt: body.as_deref().and_then(answer_excerpt) })
    }

    fn take_idle(&self, origin: &Origin) -> Option<Connection> {
        let now = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let kept = idle.get_mut(origin)?;
        while let Some(connection) = kept.pop() {
            if connection.still_open(now) {
                return Some(connection);
            }
        }
        None
    }

    fn put_idle(&self, origin: Origin, mut connection: Connection) {
        connection.idle_since = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let kept = idle.entry(origin).or_default();
        if kept.len() < self.max_idle {
            kept.push(connection);
        }
    }

    async fn connect(&self, origin: &Origin) -> Result<Connection, SendError> {
        let connecting = async {
            let addresses = self.resolve(origin).await?;
            let mut last = String::from("no address to connect to");
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(tcp) => {
                        tcp.set_nodelay(true)
                            .map_err(|e| SendError::Connect(FailureKind::Refused, e.to_string()))?;
                        let stream = if origin.tls {
                            let name = rustls::pki_types::ServerName::try_from(origin.bare_host().to_owned())
                                .map_err(|_| {
                                    SendError::Connect(
                                        FailureKind::Tls,
                                        "the agent's host is not a valid TLS name".into(),
                                    )
                                })?;
                            let tls = self.tls.connect(name, tcp).await.map_err(|e| {
                                SendError::Connect(FailureKind::Tls, format!("TLS handshake: {e}"))
                            })?;
                            Stream::Tls(Box::new(tls))
                        } else {
                            Stream::Plain(tcp)
                        };
                        return Ok(Connection {
                            stream,
                            buffer: Vec::with_capacity(1024),
                            idle_since: Instant::now(),
                        });
                    }
                    Err(error) => last = error.to_string(),
                }
            }
            Err(SendError::Connect(FailureKind::Refused, last))
        };
        tokio::time::timeout(self.connect_timeout, connecting).await.unwrap_or_else(|_| {
            Err(SendError::Connect(
                FailureKind::Refused,
                format!("no connection within {:?}", self.connect_timeout),
            ))
        })
    }

    /// The addresses to try: every one the host resolves to, or, unless private destinations
    /// are allowed, only the public ones (none: refused).
    async fn resolve(&self, origin: &Origin) -> Result<Vec<SocketAddr>, SendError> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((origin.bare_host(), origin.port))
            .await
            .map_err(|e| SendError::Connect(FailureKind::Dns, format!("resolving the agent's host: {e}")))?
            .collect();
        if self.policy.allow_private {
            return Ok(found);
        }
        let public: Vec<SocketAddr> = found.into_iter().filter(|a| is_public(a.ip())).collect();
        if public.is_empty() {
            return Err(SendError::NotAllowed(NotAllowed(
                "the agent's host resolves only to addresses that are not public",
            )));
        }
        Ok(public)
    }

    fn request_bytes(&self, origin: &Origin, post: &Post<'_>) -> Result<Vec<u8>, SendError> {
        use std::io::Write as _;
        if let Some((name, _)) = post.headers.iter().find(|(_, value)| !header_safe(value)) {
            return Err(SendError::InvalidHeader(name));
        }
        let mut request = Vec::with_capacity(256 + post.body.len());
        let target = match post.url.query() {
            Some(query) => format!("{}?{query}", post.url.path()),
            None => post.url.path().to_owned(),
        };
        let _ = write!(request, "{METHOD} {target} HTTP/1.1\r\n");
        // The framing headers, then the message's: the list operators are shown is this one
        // (`super::request::shown`).
        let (host, length) = (origin.host_header(), post.body.len().to_string());
        for (name, value) in framing(&host, &length).iter().chain(post.headers) {
            let _ = write!(request, "{name}: {value}\r\n");
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(post.body);
        Ok(request)
    }
}

/// Visible ASCII, spaces and tabs only: nothing that ends a header line.
fn header_safe(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

fn interrupted(doing: &str, error: &std::io::Error) -> SendError {
    SendError::Interrupted(format!("{doing}: {error}"))
}

fn protocol(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}

/// How an answer's body ends.
enum Framing {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

/// Reads one answer (skipping informational ones): its status, for a status that is not 2xx
/// the first [`MAX_ANSWER_EXCERPT`] bytes of its body, and whether the connection can carry
/// another request.
async fn read_answer(
    connection: &mut Connection,
    max_answer: usize,
) -> std::io::Result<(u16, Option<Vec<u8>>, bool)> {
    loop {
        let (head_len, status, framing, keep_alive) = loop {
            if let Some(head) = parse_head(&connection.buffer)? {
                break head;
            }
            if connection.buffer.len() > MAX_HEAD {
                return Err(protocol("answer head too long"));
            }
            if connection.stream.read_buf(&mut connection.buffer).await? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        };
        connection.buffer.drain(..head_len);
        if (100..200).contains(&status) && status != 101 {
            continue; // 100 Continue, 103 Early Hints: the answer follows.
        }
        let mut kept = (!(200..300).contains(&status)).then(Vec::new);
        let complete = match framing {
            Framing::None => true,
            Framing::Length(length) => skip_exactly(connection, length, max_answer, kept.as_mut()).await?,
            Framing::Chunked => skip_chunked(connection, max_answer, kept.as_mut()).await?,
            Framing::UntilClose => {
                skip_until_close(connection, max_answer, kept.as_mut()).await?;
                false
            }
        };
        let reusable = complete && keep_alive && status != 101 && connection.buffer.is_empty();
        return Ok((status, kept, reusable));
    }
}

/// Keeps the start of `bytes` in `kept`, up to [`MAX_ANSWER_EXCERPT`] and one byte more in all:
/// the byte more tells [`answer_excerpt`] that the body went on, so that it drops a character
/// the cut split.
fn keep_start(kept: Option<&mut Vec<u8>>, bytes: &[u8]) {
    if let Some(kept) = kept {
        let room = (MAX_ANSWER_EXCERPT + 1).saturating_sub(kept.len());
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The head's length, status, body framing and keep-alive, once the whole head is buffered.
fn parse_head(buffer: &[u8]) -> std::io::Result<Option<(usize, u16, Framing, bool)>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(buffer) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(protocol(&format!("malformed answer: {error}"))),
    };
    let status = response.code.ok_or_else(|| protocol("no status"))?;
    let mut keep_alive = response.version == Some(1);
    let (mut length, mut chunked) = (None, false);
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value).unwrap_or("").trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            let parsed: usize = value.parse().map_err(|_| protocol("bad content-length"))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(protocol("conflicting content-length"));
            }
            length = Some(parsed);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked =
                value.rsplit(',').next().is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            if !chunked {
                keep_alive = false; // an encoding we cannot frame: read until close
            }
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") && response.version == Some(0) {
                    keep_alive = true;
                }
            }
        }
    }
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::None
    } else if chunked {
        Framing::Chunked
    } else if let Some(length) = length {
        Framing::Length(length)
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    Ok(Some((head_len, status, framing, keep_alive)))
}

/// Reads and drops `length` bytes (keeping their start in `kept`); false (and stops) when they
/// exceed `max`.
async fn skip_exactly(
    connection: &mut Connection,
    length: usize,
    max: usize,
    kept: Option<&mut Vec<u8>>,
) -> std::io::Result<bool> {
    if length > max {
        let buffered = connection.buffer.len().min(length);
        keep_start(kept, &connection.buffer[..buffered]);
        return Ok(false);
    }
    while connection.buffer.len() < length {
        if connection.stream.read_buf(&mut connection.buffer).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
    }
    keep_start(kept, &connection.buffer[..length]);
    connection.buffer.drain(..length);
    Ok(true)
}

/// Reads and drops a chunked body and its trailers; false (and stops) past `max` bytes.
async fn skip_chunked(
    connection: &mut Connection,
    max: usize,
    mut kept: Option<&mut Vec<u8>>,
) -> std::io::Result<bool> {
    let mut read = 0usize;
    loop {
        let line = take_line(connection).await?;
        let size_text = line.split(';').next().unwrap_or("").trim().to_owned();
        let size = usize::from_str_radix(&size_text, 16).map_err(|_| protocol("bad chunk size"))?;
        if size == 0 {
            // Trailers, then an empty line.
            while !take_line(connection).await?.is_empty() {}
            return Ok(true);
        }
        read = read.saturating_add(size);
        if read > max {
            return Ok(false);
        }
        if !skip_exactly(connection, size, max, kept.as_deref_mut()).await? {
            return Ok(false);
        }
        if !take_line(connection).await?.is_empty() {
            return Err(protocol("chunk without its line end"));
        }
    }
}

/// One CRLF-terminated line of a chunked body, without the CRLF.
async fn take_line(connection: &mut Connection) -> std::io::Result<String> {
    loop {
        if let Some(end) = connection.buffer.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&connection.buffer[..end]).into_owned();
            connection.buffer.drain(..end + 2);
            return Ok(line);
        }
        if connection.buffer.len() > MAX_HEAD {
            return Err(protocol("chunk line too long"));
        }
        if connection.stream.read_buf(&mut connection.buffer).await? == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        }
    }
}

/// Reads and drops until the agent closes, or `max` bytes (keeping their start in `kept`).
async fn skip_until_close(
    connection: &mut Connection,
    max: usize,
    mut kept: Option<&mut Vec<u8>>,
) -> std::io::Result<()> {
    let mut read = connection.buffer.len();
    keep_start(kept.as_deref_mut(), &connection.buffer);
    connection.buffer.clear();
    while read <= max {
        let n = connection.stream.read_buf(&mut connection.buffer).await?;
        if n == 0 {
            break;
        }
        read += n;
        keep_start(kept.as_deref_mut(), &connection.buffer);
        connection.buffer.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> (usize, u16, bool, &'static str) {
        let (len, status, framing, keep_alive) = parse_head(text.as_bytes()).unwrap().expect("complete");
        let framing = match framing {
            Framing::None => "none",
            Framing::Length(_) => "length",
            Framing::Chunked => "chunked",
            Framing::UntilClose => "close",
        };
        (len, status, keep_alive, framing)
    }

    #[test]
    fn heads_say_how_the_body_ends_and_whether_the_connection_stays() {
        let ok = head("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        assert_eq!((ok.1, ok.2, ok.3), (200, true, "length"));
        assert_eq!(ok.0, 38, "the head ends before the body");
        assert!(!head("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n").2);
        assert_eq!(head("HTTP/1.1 204 No Content\r\n\r\n").3, "none");
        assert_eq!(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").3, "chunked");
        let (_, _, keep, framing) = head("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((keep, framing), (false, "close"), "no length: the body ends when the agent closes");
        assert!(!head("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n").2, "1.0 closes by default");
        assert!(head("HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n").2);
        assert_eq!(head("HTTP/1.1 100 Continue\r\n\r\n").1, 100);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n").unwrap().is_none(), "partial");
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n").is_err());
        assert!(parse_head(b"nonsense\r\n\r\n").is_err());
    }

    #[test]
    fn a_header_value_with_a_line_break_is_never_written() {
        let client =
            DispatchClient::new(DestinationPolicy { allow_private: true }, Duration::from_secs(1), 1, &[])
                .expect("a client");
        let url = Url::parse("http://127.0.0.1:9/x").unwrap();
        let post = Post { url: &url, headers: &[("webhook-id", "evt_1\r\nx-evil: 1")], body: b"{}" };
        let origin = Origin::of(&url).unwrap();
        assert_eq!(client.request_bytes(&origin, &post).err(), Some(SendError::InvalidHeader("webhook-id")));
        let fine = Post { url: &url, headers: &[("webhook-id", "evt_Ev0PV52K25")], body: b"{}" };
        let bytes = String::from_utf8(client.request_bytes(&origin, &fine).unwrap()).unwrap();
        assert!(bytes.starts_with("POST /x HTTP/1.1\r\nhost: 127.0.0.1:9\r\n"), "{bytes}");
        assert!(bytes.ends_with("webhook-id: evt_Ev0PV52K25\r\n\r\n{}"), "{bytes}");
    }

    #[test]
    fn origins_default_their_ports_and_refuse_other_schemes() {
        let origin = Origin::of(&Url::parse("https://agent.example/slack").unwrap()).unwrap();
        assert_eq!((origin.tls, origin.port, origin.host.as_str()), (true, 443, "agent.example"));
        let v6 = Origin::of(&Url::parse("http://[::1]:8080/x").unwrap()).unwrap();
        assert_eq!(v6.bare_host(), "::1");
        assert!(Origin::of(&Url::parse("ftp://agent.example/").unwrap()).is_err());
    }
}

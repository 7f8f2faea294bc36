//! A fault-injecting TCP proxy for tests: placed between Doorman and PostgreSQL, or between
//! Doorman and an agent, it passes bytes through until told to delay them, refuse new
//! connections (the port closes, so connecting fails with "connection refused"), cut every
//! open connection, or cut them all the moment a client sends given bytes (say, `COMMIT`: a
//! transaction cut after its statements and before its commit), or let given bytes through
//! and lose the server's answer to them as a server dying right after its commit would.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug, Default)]
struct Shared {
    /// Added before each chunk is forwarded, either way.
    delay: Mutex<Duration>,
    /// Open connections' forwarding tasks, so they can be cut.
    connections: Mutex<Vec<JoinHandle<()>>>,
    accepted: Mutex<usize>,
    /// Client bytes that trigger a cut (once), instead of being forwarded.
    cut_on: Mutex<Option<Vec<u8>>>,
    /// Client bytes to count, and how many chunks carrying them have arrived.
    watched: Mutex<Option<(Vec<u8>, usize)>>,
    /// Client bytes (once) whose answer is lost: the server gets them, its answer is dropped,
    /// and the proxy stops as a dead server would.
    lose_answer_on: Mutex<Option<Vec<u8>>>,
    /// Accepting connections while set.
    acceptor: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    fn cut(&self) {
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    fn refuse(&self) {
        if let Some(acceptor) = self.acceptor.lock().unwrap().take() {
            acceptor.abort();
        }
        self.cut();
    }
}

/// A running proxy. Stops (and cuts everything) when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// Listens on a random loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        *shared.acceptor.lock().unwrap() = Some(tokio::spawn(accept(listener, upstream, shared.clone())));
        Self { addr, upstream, shared }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        *self.shared.accepted.lock().unwrap()
    }

    /// Delay every forwarded chunk by `delay` (zero: none).
    pub fn delay(&self, delay: Duration) {
        *self.shared.delay.lock().unwrap() = delay;
    }

    /// Close every open connection at once, as a network cut or a restarted server would.
    pub fn cut(&self) {
        self.shared.cut();
    }

    /// The next time a client sends a chunk containing `pattern`, drop that chunk and cut
    /// every open connection. Once: later chunks pass again.
    pub fn cut_when_client_sends(&self, pattern: &[u8]) {
        *self.shared.cut_on.lock().unwrap() = Some(pattern.to_vec());
    }

    /// The next time a client sends a chunk containing `pattern`, forward it, then drop the
    /// server's answer on that connection and [refuse](FaultProxy::refuse) everything: the
    /// server did the work (committed, say) and died before anyone heard. Once.
    pub fn lose_answer_to(&self, pattern: &[u8]) {
        *self.shared.lose_answer_on.lock().unwrap() = Some(pattern.to_vec());
    }

    /// From now on, count the client chunks that contain `pattern` (as they arrive, before any
    /// delay), for [`FaultProxy::wait_for_client`].
    pub fn watch_client(&self, pattern: &[u8]) {
        *self.shared.watched.lock().unwrap() = Some((pattern.to_vec(), 0));
    }

    /// Waits until `count` watched chunks have arrived from clients: a positive signal that a
    /// request is on the wire (held, with a delay, inside the proxy).
    pub async fn wait_for_client(&self, count: usize, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let seen = self.client_chunks_seen();
            if seen >= count {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{seen} of {count} watched client chunks after {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// How many watched chunks have arrived from clients since [`FaultProxy::watch_client`]:
    /// with a pattern only a statement's binds carry (an event id), how many statements
    /// carrying it were sent.
    pub fn client_chunks_seen(&self) -> usize {
        self.shared.watched.lock().unwrap().as_ref().map_or(0, |(_, n)| *n)
    }

    /// Stop listening and cut every open connection: new connections are refused.
    pub fn refuse(&self) {
        self.shared.refuse();
    }

    /// Listen again on the same port after [`FaultProxy::refuse`].
    pub async fn restore(&self) {
        if self.shared.acceptor.lock().unwrap().is_some() {
            return;
        }
        // The aborted acceptor drops its listener asynchronously; retry briefly until the
        // port is free again.
        let mut listener = None;
        for _ in 0..100 {
            match TcpListener::bind(self.addr).await {
                Ok(bound) => {
                    listener = Some(bound);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        let listener = listener.expect("rebind the proxy's port");
        *self.shared.acceptor.lock().unwrap() =
            Some(tokio::spawn(accept(listener, self.upstream, self.shared.clone())));
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.refuse();
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    while let Ok((client, _)) = listener.accept().await {
        *shared.accepted.lock().unwrap() += 1;
        let task = tokio::spawn(forward(client, upstream, shared.clone()));
        let mut connections = shared.connections.lock().unwrap();
        connections.retain(|t| !t.is_finished());
        connections.push(task);
    }
}

async fn forward(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(upstream).await else { return };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    // Set once this connection's next answer is to be lost.
    let losing = Arc::new(AtomicBool::new(false));
    let up = pipe(client_read, server_write, shared.clone(), Side::Client, losing.clone());
    let down = pipe(server_read, client_write, shared, Side::Server, losing);
    // When either direction ends, the connection is over.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// Whose bytes a pipe carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    shared: Arc<Shared>,
    side: Side,
    losing: Arc<AtomicBool>,
) {
    let contains = |chunk: &[u8], pattern: &[u8]| chunk.windows(pattern.len()).any(|w| w == pattern);
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = &buffer[..n];
        match side {
            Side::Client => {
                if let Some((pattern, seen)) = shared.watched.lock().unwrap().as_mut()
                    && contains(chunk, pattern)
                {
                    *seen += 1;
                }
                let mut cut_on = shared.cut_on.lock().unwrap();
                if cut_on.as_ref().is_some_and(|p| contains(chunk, p)) {
                    *cut_on = None;
                    drop(cut_on);
                    shared.cut();
                    return;
                }
                drop(cut_on);
                let mut lose_on = shared.lose_answer_on.lock().unwrap();
                if lose_on.as_ref().is_some_and(|p| contains(chunk, p)) {
                    *lose_on = None;
                    losing.store(true, Ordering::SeqCst);
                }
            }
            Side::Server if losing.load(Ordering::SeqCst) => {
                shared.refuse();
                return;
            }
            Side::Server => {}
        }
        let delay = *shared.delay.lock().unwrap();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if to.write_all(chunk).await.is_err() {
            return;
        }
    }
}

//! PgBouncer (Debian's package) in transaction pooling mode, in front of the test server.
//!
//! Started by a test on a free loopback port with a configuration of its own in a temporary
//! directory, forwarding every database name to the same name on the test server. PgBouncer
//! refuses to run as root, so when the tests do it runs as the `postgres` OS user. It lets in
//! the logins it is given, without a password (the test server trusts loopback). Stopped, and
//! its directory removed, when dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::as_postgres;
use std::time::{Duration, Instant};

/// A running PgBouncer.
#[derive(Debug)]
pub struct PgBouncer {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl PgBouncer {
    /// Starts PgBouncer in transaction mode before `upstream`, letting in `users`, each
    /// given at most `pool_size` server connections per database.
    pub fn start(upstream: SocketAddr, users: &[&str], pool_size: u32) -> Self {
        let dir = std::env::temp_dir().join(format!("doorman-pgbouncer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("create PgBouncer's directory");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let userlist: String = users.iter().map(|user| format!("\"{user}\" \"\"\n")).collect();
        std::fs::write(dir.join("userlist.txt"), userlist).expect("write userlist.txt");
        let ini = format!(
            "[databases]\n* = host={} port={}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {dir}/userlist.txt\npool_mode = transaction\n\
             default_pool_size = {pool_size}\nmax_client_conn = 500\nserver_reset_query =\n\
             logfile = {dir}/pgbouncer.log\n",
            upstream.ip(),
            upstream.port(),
            dir = dir.display(),
        );
        let config = dir.join("pgbouncer.ini");
        std::fs::write(&config, ini).expect("write pgbouncer.ini");
        as_postgres::hand_over(&dir);
        let child = as_postgres::command("pgbouncer")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pgbouncer (Debian's `pgbouncer` package; `just pgbouncer` installs it)");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let bouncer = Self { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "PgBouncer did not listen on {addr}: {}", bouncer.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        bouncer
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What PgBouncer logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // `runuser` passes SIGTERM on to PgBouncer, which exits.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

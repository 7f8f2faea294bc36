//! A PostgreSQL server of a test's own: `initdb` into a temporary directory, started on a free
//! loopback port, stopped and removed when dropped. With TLS ([`Tls`]: a test CA and a
//! certificate for the names asked for), with extra settings (`shared_preload_libraries`,
//! say), or both. The failover [`crate::Cluster`] starts its servers with the same tools.
//!
//! The tools refuse to run as root, so when the tests do they run as the `postgres` OS user
//! ([`crate::as_postgres`]). The binaries are found in `PG_BIN`, or else in the newest
//! `/usr/lib/postgresql/*/bin`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::as_postgres;

/// A certificate authority of the test's own, and the server's certificate it signed.
#[derive(Debug)]
pub struct Tls {
    /// The CA's certificate (PEM): what a client trusts (`sslrootcert`).
    pub ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl Tls {
    /// A fresh CA, and a server certificate naming `names` (DNS names, or IP addresses).
    pub fn for_names(names: &[&str]) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("a CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "doorman test CA");
        let ca = ca_params.self_signed(&ca_key).expect("a CA certificate");
        let server_key = rcgen::KeyPair::generate().expect("a server key");
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("server certificate parameters");
        params.distinguished_name.push(rcgen::DnType::CommonName, names.first().copied().unwrap_or("server"));
        let cert = params.signed_by(&server_key, &ca, &ca_key).expect("a server certificate");
        Self { ca_pem: ca.pem(), cert_pem: cert.pem(), key_pem: server_key.serialize_pem() }
    }

    /// A self-signed X.509 *version 1* certificate for `name`, as `openssl x509 -req` and
    /// Citus make them (webpki cannot parse these; libpq connects to them under `require`).
    pub fn version_1_self_signed(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("doorman-v1-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("a directory for the certificate");
        let (key, csr, crt) = (dir.join("key.pem"), dir.join("req.csr"), dir.join("crt.pem"));
        let openssl = |args: &[&str]| {
            let output = Command::new("openssl").args(args).output().expect("openssl runs");
            assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        };
        let subject = format!("/CN={name}");
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            path(&key),
            "-subj",
            &subject,
            "-out",
            path(&csr),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-in",
            path(&csr),
            "-signkey",
            path(&key),
            "-days",
            "2",
            "-out",
            path(&crt),
        ]);
        let read = |file: &Path| std::fs::read_to_string(file).expect("read what openssl wrote");
        let tls = Self { ca_pem: read(&crt), cert_pem: read(&crt), key_pem: read(&key) };
        let _ = std::fs::remove_dir_all(dir);
        tls
    }
}

/// How a [`PgServer`] is set up.
#[derive(Debug, Default)]
pub struct ServerOptions {
    /// Lines for `postgresql.conf`.
    pub conf: String,
    /// Serve TLS with these certificates.
    pub tls: Option<Tls>,
    /// Lines for `pg_hba.conf`, before the `trust` ones `initdb -A trust` wrote.
    pub hba: String,
}

/// A running server.
#[derive(Debug)]
pub struct PgServer {
    root: PathBuf,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    ca_pem: Option<String>,
}

impl PgServer {
    pub fn start(options: ServerOptions) -> Self {
        let bin = pg_bin();
        let root = std::env::temp_dir().join(format!("doorman-server-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&root).expect("create the server's directory");
        as_postgres::hand_over(&root);
        let data = root.join("data");
        initdb(&bin, &data);
        let mut conf = format!(
            "listen_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nmax_connections = 60\n\
             shared_buffers = 32MB\nfsync = off\nlog_min_messages = warning\n",
            root.display()
        );
        if let Some(tls) = &options.tls {
            for (file, pem) in [("server.crt", &tls.cert_pem), ("server.key", &tls.key_pem)] {
                std::fs::write(data.join(file), pem).expect("write a TLS file");
            }
            conf.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        }
        conf.push_str(&options.conf);
        append(&data.join("postgresql.conf"), &conf);
        if !options.hba.is_empty() {
            let hba = data.join("pg_hba.conf");
            let existing = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
            std::fs::write(&hba, format!("{}\n{existing}", options.hba)).expect("write pg_hba.conf");
        }
        as_postgres::hand_over(&root);
        as_postgres::private_key(&data.join("server.key"));
        let port = start_on_a_free_port(&bin, &data);
        let ca_pem = options.tls.map(|tls| tls.ca_pem);
        Self { root, bin, data, port, ca_pem }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://{user}@{host}:{port}/{database}`: `host` is `127.0.0.1` or `localhost`.
    pub fn url(&self, user: &str, host: &str, database: &str) -> String {
        format!("postgres://{user}@{host}:{}/{database}", self.port)
    }

    /// Runs `sql` in `database` as `postgres`; its output, or `None` if it failed.
    pub fn sql(&self, database: &str, sql: &str) -> Option<String> {
        psql(&self.bin, self.port, database, sql)
    }

    /// The same, logging in as `user`: `Err` with what psql said when it failed (a login
    /// refused, a statement refused).
    pub fn sql_as(&self, user: &str, database: &str, sql: &str) -> Result<String, String> {
        psql_as(&self.bin, self.port, user, database, sql)
    }

    /// The CA its certificate chains to (PEM), when it serves TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The server's data directory (for files a test writes next to it).
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`): its clients'
    /// connections close and new ones are refused until [`PgServer::start_again`].
    pub fn stop_immediately(&self) {
        run_as_postgres(&self.bin, "pg_ctl", &["-D", path(&self.data), "-m", "immediate", "-w", "stop"]);
    }

    /// Starts the stopped server again on the same port.
    pub fn start_again(&self) {
        let log = self.data.with_extension("log");
        run_as_postgres(
            &self.bin,
            "pg_ctl",
            &["-D", path(&self.data), "-l", path(&log), "-w", "-t", "30", "start"],
        );
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        stop_immediately(&self.data);
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `initdb` with trust authentication for local tests.
pub(crate) fn initdb(bin: &Path, data: &Path) {
    run_as_postgres(
        bin,
        "initdb",
        &["-D", path(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
    );
}

/// SIGQUIT to the postmaster: an immediate shutdown, as `pg_ctl stop -m immediate` sends.
pub(crate) fn stop_immediately(data: &Path) {
    let pid_file = data.join("postmaster.pid");
    if let Some(pid) =
        std::fs::read_to_string(pid_file).ok().and_then(|s| s.lines().next().map(str::to_owned))
    {
        let _ = Command::new("kill").args(["-QUIT", &pid]).status();
    }
}

/// Starts the server in `data` on a port free at that moment, and answers it. A port chosen
/// earlier may be taken meanwhile (tests bind ports all the time), so one that turns out taken
/// is replaced.
pub(crate) fn start_on_a_free_port(bin: &Path, data: &Path) -> u16 {
    let log = data.with_extension("log");
    for attempt in 1..=3 {
        let port = free_port();
        // The last `port` line of postgresql.conf wins.
        append(&data.join("postgresql.conf"), &format!("port = {port}\n"));
        let output = as_postgres::command(bin.join("pg_ctl"))
            .args(["-D", path(data), "-l", path(&log), "-w", "-t", "30", "start"])
            .output()
            .unwrap_or_else(|error| panic!("run pg_ctl: {error}"));
        if output.status.success() {
            return port;
        }
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            attempt < 3 && logged.contains("already in use"),
            "pg_ctl start in {} failed: {}{}\n{logged}",
            data.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    unreachable!("the third failed start panics above")
}

pub(crate) fn psql(bin: &Path, port: u16, database: &str, sql: &str) -> Option<String> {
    psql_as(bin, port, "postgres", database, sql).ok()
}

fn psql_as(bin: &Path, port: u16, user: &str, database: &str, sql: &str) -> Result<String, String> {
    let output = Command::new(bin.join("psql"))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", user, "-d", database, "-Atqc", sql])
        .env("PGSSLMODE", "prefer")
        .output()
        .map_err(|error| format!("run psql: {error}"))?;
    match output.status.success() {
        true => Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned()),
        false => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
    }
}

pub(crate) fn run_as_postgres(bin: &Path, tool: &str, args: &[&str]) {
    let output = as_postgres::command(bin.join(tool))
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("run {tool}: {error}"));
    assert!(
        output.status.success(),
        "{tool} {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub(crate) fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `PG_BIN`, or the newest `/usr/lib/postgresql/<version>/bin`.
pub(crate) fn pg_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("PG_BIN") {
        return PathBuf::from(bin);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's server binaries under /usr/lib/postgresql (or PG_BIN)")
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).expect("a PostgreSQL version under /usr/lib/postgresql")
}

/// A port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

pub(crate) fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(file).expect("open a config file");
    file.write_all(text.as_bytes()).expect("append to a config file");
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

//! Connections as the URL's `sslmode` says, against a server of the test's own with TLS on:
//! a test CA, a certificate for `localhost`, plaintext refused by `pg_hba.conf`. Every
//! refusal names its cause (TLS, refused, authentication), never a wait.

use std::time::Duration;

use diesel::sql_types::{Bool, Text};
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::connect::{SessionLimits, Target};
use doorman_adapters::postgres::{PoolSettings, pool};
use doorman_testkit::server::{PgServer, ServerOptions, Tls};

/// TLS only (plaintext from TCP is rejected), and a role that must give a password.
fn tls_only_server() -> PgServer {
    PgServer::start(ServerOptions {
        tls: Some(Tls::for_names(&["localhost"])),
        hba: "hostnossl all all 0.0.0.0/0 reject\nhostnossl all all ::/0 reject\n\
              hostssl all with_password all scram-sha-256\n"
            .into(),
        ..ServerOptions::default()
    })
}

/// `ca_pem` in a file of its own, for `sslrootcert`.
fn roots_file(ca_pem: &str) -> tempfile_path::Path {
    tempfile_path::Path::with(ca_pem)
}

mod tempfile_path {
    /// A file removed when dropped.
    pub struct Path(pub std::path::PathBuf);

    impl Path {
        pub fn with(contents: &str) -> Self {
            let path =
                std::env::temp_dir().join(format!("doorman-roots-{}.pem", uuid::Uuid::new_v4().simple()));
            std::fs::write(&path, contents).expect("write the roots file");
            Self(path)
        }

        pub fn as_str(&self) -> &str {
            self.0.to_str().expect("a UTF-8 path")
        }
    }

    impl Drop for Path {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[derive(diesel::QueryableByName, Debug)]
struct Ssl {
    #[diesel(sql_type = Bool)]
    ssl: bool,
    #[diesel(sql_type = Text)]
    version: String,
}

/// Opens one connection as `url` says; whether it is encrypted, or why it failed.
async fn open(url: &str) -> Result<Ssl, String> {
    let target = Target::parse(url).map_err(|e| e.to_string())?;
    let mut conn = target.establish(&SessionLimits::default()).await.map_err(|e| e.to_string())?;
    diesel::sql_query(
        "SELECT ssl, coalesce(version, '') AS version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    )
    .get_result::<Ssl>(&mut conn)
    .await
    .map_err(|e| e.to_string())
}

fn never_a_wait(error: &str) {
    assert!(!error.contains("timed out"), "a refusal reads as a wait: {error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_sslmode_connects_or_refuses_as_libpq_does() {
    let server = tls_only_server();
    let ca = roots_file(server.ca_pem().expect("the server has TLS"));
    let other_ca = roots_file(&Tls::for_names(&["localhost"]).ca_pem);
    let url = |host: &str, query: &str| format!("{}?{query}", server.url("postgres", host, "postgres"));

    // Encrypted without a check, as libpq does without a root file.
    for query in ["sslmode=require", "sslmode=prefer"] {
        let ssl = open(&url("127.0.0.1", query)).await.unwrap_or_else(|e| panic!("{query}: {e}"));
        assert!(ssl.ssl, "{query} did not encrypt");
        assert!(ssl.version.starts_with("TLSv1."), "{query}: {}", ssl.version);
    }
    // The chain checked: the name is not (verify-ca), then is (verify-full).
    let verify_ca = format!("sslmode=verify-ca&sslrootcert={}", ca.as_str());
    assert!(open(&url("127.0.0.1", &verify_ca)).await.unwrap().ssl);
    let verify_full = format!("sslmode=verify-full&sslrootcert={}", ca.as_str());
    assert!(open(&url("localhost", &verify_full)).await.unwrap().ssl);

    // Plaintext where the server takes only TLS: the server's refusal, named.
    let plain = open(&url("127.0.0.1", "sslmode=disable")).await.unwrap_err();
    assert!(plain.contains("no encryption") || plain.contains("pg_hba.conf"), "{plain}");
    never_a_wait(&plain);

    // A certificate that does not name the host connected to.
    let mismatch = open(&url("127.0.0.1", &verify_full)).await.unwrap_err();
    assert!(mismatch.to_lowercase().contains("certificate"), "{mismatch}");
    never_a_wait(&mismatch);

    // A certificate from a CA not trusted, for verify-ca and for require with roots.
    for mode in ["verify-ca", "require"] {
        let query = format!("sslmode={mode}&sslrootcert={}", other_ca.as_str());
        let unknown = open(&url("localhost", &query)).await.unwrap_err();
        assert!(unknown.to_lowercase().contains("certificate"), "{mode}: {unknown}");
        never_a_wait(&unknown);
    }

    // verify-* without roots is a setting error, found before any connection.
    let no_roots = open(&url("localhost", "sslmode=verify-full")).await.unwrap_err();
    assert!(no_roots.contains("needs sslrootcert"), "{no_roots}");
    let unknown_mode = open(&url("localhost", "sslmode=always")).await.unwrap_err();
    assert!(unknown_mode.contains("is not one of"), "{unknown_mode}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_that_cannot_connect_says_why() {
    let server = tls_only_server();
    server
        .sql("postgres", "CREATE ROLE with_password LOGIN PASSWORD 'right-password'")
        .expect("create a role");
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let settings = PoolSettings { connection_timeout: Duration::from_secs(2), ..PoolSettings::default() };
    let cases = [
        (format!("postgres://postgres@127.0.0.1:{closed_port}/postgres"), "refused"),
        (
            format!(
                "postgres://with_password:wrong-password@127.0.0.1:{}/postgres?sslmode=require",
                server.port()
            ),
            "password authentication failed",
        ),
        (format!("{}?sslmode=disable", server.url("postgres", "127.0.0.1", "postgres")), "no encryption"),
    ];
    for (url, cause) in cases {
        let pool = pool::connect_as(&url, &settings, None);
        let error = match pool.unit().await {
            Ok(_) => panic!("{cause}: connected"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains(cause), "expected {cause:?} in: {error}");
        assert!(!error.contains("wrong-password"), "the password is in the error: {error}");
        never_a_wait(&error);
    }

    // The right password, over TLS, through the pool.
    let url = format!(
        "postgres://with_password:right-password@127.0.0.1:{}/postgres?sslmode=require",
        server.port()
    );
    let pool = pool::connect_as(&url, &settings, None);
    let unit = pool.unit().await.expect("a connection with the right password");
    unit.rollback().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_pooled_connection_keeps_its_time_limits() {
    let server = tls_only_server();
    let limits = SessionLimits {
        statement: Duration::from_millis(1500),
        lock: Duration::from_millis(1000),
        idle_in_transaction: Duration::from_secs(5),
    };
    let settings = PoolSettings { limits, ..PoolSettings::default() };
    let url = format!("{}?sslmode=require", server.url("postgres", "127.0.0.1", "postgres"));
    let pool = pool::connect_as(&url, &settings, None);

    #[derive(diesel::QueryableByName)]
    struct Settings {
        #[diesel(sql_type = Text)]
        statement: String,
        #[diesel(sql_type = Text)]
        lock: String,
        #[diesel(sql_type = Text)]
        idle: String,
    }
    let mut unit = pool.unit().await.unwrap();
    let shown: Settings = diesel::sql_query(
        "SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock, \
         current_setting('idle_in_transaction_session_timeout') AS idle",
    )
    .get_result(&mut *unit)
    .await
    .unwrap();
    assert_eq!((shown.statement.as_str(), shown.lock.as_str(), shown.idle.as_str()), ("1500ms", "1s", "5s"));

    // A statement past its bound is cancelled by the server, and says so.
    let slow = diesel::sql_query("SELECT pg_sleep(3)").execute(&mut *unit).await.unwrap_err();
    assert!(slow.to_string().contains("statement timeout"), "{slow}");
    unit.rollback().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_1_certificate_is_encrypted_to_as_libpq_does_when_nothing_is_verified() {
    // Citus generates such a certificate on every node it finds without TLS.
    let server = PgServer::start(ServerOptions {
        tls: Some(Tls::version_1_self_signed("localhost")),
        ..ServerOptions::default()
    });
    for query in ["sslmode=prefer", "sslmode=require"] {
        let url = format!("{}?{query}", server.url("postgres", "127.0.0.1", "postgres"));
        let ssl = open(&url).await.unwrap_or_else(|e| panic!("{query}: {e}"));
        assert!(ssl.ssl, "{query} did not encrypt");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_that_accepts_and_never_answers_is_given_up_within_the_connect_timeout() {
    // Accepts TCP connections and says nothing, as a half-dead proxy does.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            kept.push(socket);
        }
    });
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable&connect_timeout=1");
    let settings = PoolSettings { connection_timeout: Duration::from_millis(500), ..PoolSettings::default() };
    let pool = pool::connect_as(&url, &settings, None);
    let first = pool.unit().await.map(drop).unwrap_err().to_string();
    assert!(first.contains("has not answered a connection attempt"), "{first}");

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let later = pool.unit().await.map(drop).unwrap_err().to_string();
    assert!(later.contains("did not complete the connection"), "the attempt was given up: {later}");
    held.abort();
}

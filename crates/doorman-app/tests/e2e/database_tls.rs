//! The binary against a server that takes TLS only, as managed PostgreSQL services do:
//! `doorman migrate` and `doorman serve` with `sslmode=verify-full`, every connection they
//! open encrypted (the pools and the directory's listener), and a delivery served end to end.

use doorman_adapters::postgres::connect::{SessionLimits, Target};
use doorman_testkit::FakeAgent;
use doorman_testkit::database::{SERVER_ROLE, create_login_roles, tenant_with_agent};
use doorman_testkit::operator::TestOperator;
use doorman_testkit::server::{PgServer, ServerOptions, Tls};

use crate::helpers::{AGENT_SECRET, http_client, post_event, quiesce, spawn_serve_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_and_serve_over_verify_full_encrypt_every_connection() {
    let server = PgServer::start(ServerOptions {
        tls: Some(Tls::for_names(&["localhost"])),
        hba: "hostnossl all all 0.0.0.0/0 reject\nhostnossl all all ::/0 reject\n".into(),
        ..ServerOptions::default()
    });
    server.sql("postgres", "CREATE DATABASE doorman").expect("create the database");
    let roots = std::env::temp_dir().join(format!("doorman-e2e-roots-{}.pem", server.port()));
    std::fs::write(&roots, server.ca_pem().unwrap()).unwrap();
    let tls = format!("sslmode=verify-full&sslrootcert={}", roots.display());
    let owner_url = format!("{}?{tls}", server.url("postgres", "localhost", "doorman"));

    let migrate = std::process::Command::new(env!("CARGO_BIN_EXE_doorman"))
        .arg("migrate")
        .env("DATABASE_URL", &owner_url)
        .output()
        .unwrap();
    assert!(migrate.status.success(), "migrate over TLS: {}", String::from_utf8_lossy(&migrate.stderr));

    let target = Target::parse(&owner_url).unwrap();
    create_login_roles(&mut target.establish(&SessionLimits::default()).await.unwrap()).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&TestOperator::owner(&owner_url), "T1", agent.url(), AGENT_SECRET).await;

    let serve_url = format!("{}?{tls}", server.url(SERVER_ROLE, "localhost", "doorman"));
    let process = spawn_serve_on(&serve_url, "warn", &["--workers", "1"]);
    let http = http_client();
    assert_eq!(post_event(&http, process.base(), "T1", "EvOverTls").await, 200);
    quiesce(&http, process.metrics_base()).await;
    assert_eq!(agent.count_for("EvOverTls"), 1);

    let plain = server
        .sql(
            "doorman",
            &format!(
                "SELECT count(*) FILTER (WHERE NOT s.ssl) || ' ' || count(*) FILTER (WHERE a.query LIKE 'LISTEN%') \
                 FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                 WHERE a.usename = '{SERVER_ROLE}' AND a.client_addr IS NOT NULL"
            ),
        )
        .expect("read pg_stat_ssl");
    assert_eq!(plain, "0 1", "no plaintext connection, and the listener among the encrypted ones");
    let _ = std::fs::remove_file(roots);
}

//! A process started with a login that cannot do its work refuses to start and says why (the
//! login missing, its password refused, not a member of its role); one that can do more than
//! its work (a superuser, the tables' owner) starts with a warning.

use doorman_app::cli::{AdminCommand, Cli, Command};
use doorman_app::config::AdminConfig;
use doorman_app::operator;
use doorman_testkit::database::{TEST_KEYS, TestDatabase, with_user};
use doorman_testkit::server::{PgServer, ServerOptions};

use crate::helpers::serve_config;

/// `doorman admin serve` on `url`, started in this runtime: the error it refused with, if it did.
async fn admin_start(url: &str) -> Option<String> {
    let argv = [
        "doorman",
        "admin",
        "serve",
        "--database-url",
        url,
        "--bind",
        "127.0.0.1:0",
        "--encryption-keys",
        TEST_KEYS,
    ];
    let Command::Admin(AdminCommand::Serve(args)) =
        clap::Parser::try_parse_from(argv).map(|c: Cli| c.command).unwrap()
    else {
        unreachable!()
    };
    match operator::start(AdminConfig::from_args(&args).unwrap()).await {
        Ok(running) => {
            running.shutdown().await;
            None
        }
        Err(error) => Some(format!("{error:#}")),
    }
}

async fn serve_start(url: &str) -> Option<String> {
    match doorman_app::slack::start(serve_config(url, &[])).await {
        Ok(running) => {
            running.shutdown().await;
            None
        }
        Err(error) => Some(format!("{error:#}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_cannot_act_as_its_role_is_refused_at_start_naming_why() {
    let db = TestDatabase::create().await;
    let ghost = with_user(db.url(), "no_such_login");
    let admin_refusal = admin_start(&ghost).await.expect("a login that does not exist is refused");
    assert!(admin_refusal.contains("does not exist"), "{admin_refusal}");
    assert!(serve_start(&ghost).await.is_some_and(|e| e.contains("does not exist")));

    // The Slack-facing process's login is no member of doorman_admin, and the reverse.
    let not_admin = admin_start(&db.server_url()).await.expect("refused");
    assert!(not_admin.contains("not a member of doorman_admin"), "{not_admin}");
    let not_app = serve_start(&db.admin_url()).await.expect("refused");
    assert!(not_app.contains("not a member of doorman_app"), "{not_app}");

    // Each with its own login starts.
    assert_eq!(admin_start(&db.admin_url()).await, None);
    assert_eq!(serve_start(&db.server_url()).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_password_is_said_at_start_and_never_printed() {
    // A server of the test's own that asks this login for a password.
    let server = tokio::task::spawn_blocking(|| {
        PgServer::start(ServerOptions {
            hba: "host all with_password 127.0.0.1/32 scram-sha-256\n".into(),
            ..ServerOptions::default()
        })
    })
    .await
    .unwrap();
    assert!(server.sql("postgres", "CREATE ROLE with_password LOGIN PASSWORD 'the-right-one'").is_some());
    let url = format!(
        "postgres://with_password:w0ng-pa55word@127.0.0.1:{}/postgres?sslmode=disable",
        server.port()
    );
    let refused = admin_start(&url).await.expect("refused");
    assert!(refused.contains("password"), "{refused}");
    assert!(!refused.contains("w0ng-pa55word"), "the password is never printed: {refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superuser_login_starts_with_a_warning_that_says_so() {
    let db = TestDatabase::create().await;
    let env = [("DATABASE_URL", db.url()), ("DOORMAN_ENCRYPTION_KEYS", TEST_KEYS)];
    let process =
        doorman_testkit::ServeProcess::spawn_admin(env!("CARGO_BIN_EXE_doorman").as_ref(), &env, &[])
            .expect("it starts");
    let logs = process.logs();
    assert!(logs.contains("a superuser") && logs.contains("doorman_admin"), "{logs}");
}

/// PostgreSQL answering the login in German (`lc_messages = 'de_DE.UTF-8'`): a `doorman serve`
/// whose login may set `lc_messages` has its sessions set it to `C`, so a claim that meets a
/// lock timeout is answered 503 (Slack retries; nothing was written), as on an English server,
/// not 500 as a bug; one whose login may not starts with a warning naming the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_answered_in_german_gets_503_for_a_lock_timeout_or_a_warning_at_start() {
    use diesel_async::{AsyncConnection, SimpleAsyncConnection};
    use doorman_testkit::FakeAgent;
    use doorman_testkit::database::{MESSAGES_ROLE, SERVER_ROLE, tenant_with_agent};

    use crate::helpers::{AGENT_SECRET, http_client, post_event, spawn_serve_on};

    let db = TestDatabase::create().await;
    let agent = FakeAgent::start(AGENT_SECRET);
    tenant_with_agent(&db.operator(), "TDE", agent.url(), AGENT_SECRET).await;
    for login in [SERVER_ROLE, MESSAGES_ROLE] {
        db.messages_in_german(login).await;
    }
    let warned = spawn_serve_on(&db.url_as(SERVER_ROLE), "warn", &[]);
    let logs = warned.logs();
    assert!(logs.contains("not in English") && logs.contains("SET lc_messages = 'C'"), "{logs}");
    warned.stop(std::time::Duration::from_secs(10)).await;

    let server = spawn_serve_on(&db.url_as(MESSAGES_ROLE), "warn", &[]);
    assert!(!server.logs().contains("not in English"), "{}", server.logs());
    let mut holder = diesel_async::AsyncPgConnection::establish(db.url()).await.unwrap();
    holder
        .batch_execute("BEGIN; LOCK TABLE messaging_event_receipts IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let status = post_event(&http_client(), server.base(), "TDE", "EvLocked").await;
    holder.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(status, 503, "a lock timeout is worth Slack's retry: {}", server.logs());
    assert_eq!(agent.count(), 0);
}

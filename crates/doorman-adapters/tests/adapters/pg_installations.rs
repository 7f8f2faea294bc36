//! The install flow's storage on real PostgreSQL, as the server's role sees it: links, one-time
//! states bound to a browser, installations sealed and tenant-bound, and their lifecycle.

use std::sync::Arc;

use chrono::{Duration, Utc};
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::{PgInstallStore, PgInstallations, PgTenantDirectory};
use doorman_domain::ports::{InstallStore, Installations, TenantDirectory};
use doorman_domain::{
    Grant, Installation, Lifecycle, LinkState, Platform, Recorded, SlackToken, StateRefusal, TakenState,
    TenantId, WorkspaceRef,
};
use doorman_testkit::database::{TestDatabase, test_keys};
use doorman_testkit::fake_slack::{FakeSlack, Workspace as FakeWorkspace};

use crate::fixtures::ws;

fn store(db: &TestDatabase) -> PgInstallStore {
    PgInstallStore::new(db.pool(), Arc::new(test_keys()))
}

fn grant(team: &str, token: &str) -> Grant {
    Grant {
        workspace: WorkspaceRef::team(ws(team)),
        workspace_name: format!("{team} Co"),
        app_id: "A1".into(),
        bot_user_id: "UBOT".into(),
        bot_token: SlackToken::new(token).unwrap(),
        scopes: "commands,chat:write".into(),
        refresh_token: Some(SlackToken::new(format!("{token}-refresh")).unwrap()),
        expires_at: Some(Utc::now() + Duration::hours(12)),
    }
}

async fn tenant(db: &TestDatabase, tenant_name: &str) -> TenantId {
    db.operator().create_tenant(tenant_name).await
}

#[tokio::test]
async fn install_links_are_found_by_their_token_until_they_expire() {
    let db = TestDatabase::create().await;
    let acme = tenant(&db, "Acme").await;
    let op = db.operator();
    let live = op.install_link_until(acme, Utc::now() + Duration::hours(1)).await;
    let old = op.install_link_until(acme, Utc::now() - Duration::seconds(1)).await;
    let store = store(&db);

    assert_eq!(store.link(&live).await.unwrap(), LinkState::Active(acme));
    assert_eq!(store.link(&live).await.unwrap(), LinkState::Active(acme), "usable for several installs");
    assert_eq!(store.link(&old).await.unwrap(), LinkState::Expired);
    assert_eq!(store.link("not-a-link").await.unwrap(), LinkState::Unknown);
}

#[tokio::test]
async fn a_state_is_taken_once_by_the_browser_that_opened_it_before_it_expires() {
    let db = TestDatabase::create().await;
    let acme = tenant(&db, "Acme").await;
    let store = store(&db);
    let soon = Utc::now() + Duration::minutes(10);

    let opened = store.open_state(acme, soon).await.unwrap();
    let other = store.open_state(acme, soon).await.unwrap();
    assert_ne!(opened.state, other.state);
    assert_eq!(
        store.take_state(&opened.state, &other.browser).await.unwrap(),
        TakenState::Refused(StateRefusal::OtherBrowser)
    );
    assert_eq!(
        store.take_state(&opened.state, &opened.browser).await.unwrap(),
        TakenState::Taken { tenant: acme, tenant_name: "Acme".into() },
        "another browser's attempt did not spend it"
    );
    assert_eq!(
        store.take_state(&opened.state, &opened.browser).await.unwrap(),
        TakenState::Refused(StateRefusal::Used)
    );
    assert_eq!(
        store.take_state("nope", &opened.browser).await.unwrap(),
        TakenState::Refused(StateRefusal::Unknown)
    );

    let stale = store.open_state(acme, Utc::now() - Duration::seconds(1)).await.unwrap();
    assert_eq!(
        store.take_state(&stale.state, &stale.browser).await.unwrap(),
        TakenState::Refused(StateRefusal::Expired)
    );
}

#[tokio::test]
async fn an_installation_links_its_workspace_once_and_another_tenant_is_refused() {
    let db = TestDatabase::create().await;
    let (acme, rival) = (tenant(&db, "Acme").await, tenant(&db, "Rival").await);
    let store = store(&db);

    assert_eq!(store.record(acme, &grant("T1", "xoxb-first")).await.unwrap(), Recorded::Installed);
    assert_eq!(store.record(acme, &grant("T1", "xoxb-second")).await.unwrap(), Recorded::Updated);
    assert_eq!(store.record(rival, &grant("T1", "xoxb-rival")).await.unwrap(), Recorded::Taken);

    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    let found = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
    assert_eq!(found.id, acme, "the rival changed nothing");
    let installation = found.installation.expect("installed");
    assert_eq!(installation.bot_token.unwrap().expose(), "xoxb-second", "opened from its sealed form");
    assert_eq!(installation.bot_user_id, "UBOT");
    assert!(installation.refreshable);

    // Stored sealed: no token in any column, as the owner reads the table.
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        row: String,
    }
    let rows: Vec<Row> = diesel::sql_query("SELECT t::text AS row FROM messaging_installations t")
        .load(&mut db.owner().await)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].row.contains("xoxb-") && !rows[0].row.contains("refresh"), "{}", rows[0].row);
}

#[tokio::test]
async fn an_uninstall_removes_the_installation_and_the_link_and_a_revocation_only_the_tokens() {
    let db = TestDatabase::create().await;
    let acme = tenant(&db, "Acme").await;
    let store = store(&db);
    store.record(acme, &grant("T1", "xoxb-one")).await.unwrap();
    store.record(acme, &grant("T2", "xoxb-two")).await.unwrap();
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), None);
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    let team = |id: &str| WorkspaceRef::team(ws(id));

    let revoked = Lifecycle::TokensRevoked { bot_user_ids: vec!["UBOT".into()] };
    installations.apply(acme, &team("T2"), &revoked).await.unwrap();
    let two = directory.resolve(Platform::Slack, &team("T2")).await.unwrap().unwrap();
    let two = two.installation.expect("the installation stays");
    assert!(two.bot_token.is_none() && !two.refreshable, "its tokens are gone");

    installations.apply(acme, &team("T1"), &Lifecycle::Uninstalled).await.unwrap();
    assert_eq!(directory.resolve(Platform::Slack, &team("T1")).await.unwrap(), None, "no link, no tenant");
    assert!(
        directory.resolve(Platform::Slack, &team("T2")).await.unwrap().is_some(),
        "the other workspace is untouched"
    );
}

#[tokio::test]
async fn another_tenants_installation_cannot_be_changed_by_naming_the_wrong_tenant() {
    let db = TestDatabase::create().await;
    let (acme, rival) = (tenant(&db, "Acme").await, tenant(&db, "Rival").await);
    store(&db).record(acme, &grant("T1", "xoxb-acme")).await.unwrap();
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), None);
    let team = WorkspaceRef::team(ws("T1"));

    // The rival's transactions see none of Acme's rows, so neither lifecycle touches them.
    installations
        .apply(rival, &team, &Lifecycle::TokensRevoked { bot_user_ids: vec!["UBOT".into()] })
        .await
        .unwrap();
    installations.apply(rival, &team, &Lifecycle::Uninstalled).await.unwrap();
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    let found = directory.resolve(Platform::Slack, &team).await.unwrap().unwrap();
    assert_eq!(found.id, acme);
    assert_eq!(found.installation.unwrap().bot_token.unwrap().expose(), "xoxb-acme");
}

#[tokio::test]
async fn a_refresh_the_database_cannot_serve_is_a_storage_failure_not_slacks() {
    let db = TestDatabase::create().await;
    let acme = tenant(&db, "Acme").await;
    store(&db).record(acme, &grant("T1", "xoxb-old")).await.unwrap();
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    let installed = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
    let installation = installed.installation.expect("installed");

    // Slack is configured, but nothing ever reaches it: the database is down first.
    let slack =
        doorman_adapters::slack::oauth::SlackOAuthClient::new(doorman_adapters::slack::oauth::SlackApp {
            client_id: "x".into(),
            client_secret: "y".into(),
            api_url: "http://127.0.0.1:9/api".into(),
            redirect_uri: "http://127.0.0.1:9/slack/oauth/callback".into(),
        })
        .unwrap();
    let settings = doorman_adapters::postgres::PoolSettings {
        connection_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let down = doorman_adapters::postgres::pool::connect("postgres://nobody@127.0.0.1:1/nothing", &settings);
    let installations = PgInstallations::new(down, Arc::new(test_keys()), Some(slack));
    let error = installations.refresh(acme, &installation).await.unwrap_err();
    assert!(
        matches!(error, doorman_domain::RefreshError::Storage(doorman_domain::StorageError::Unavailable(_))),
        "{error:?}"
    );
    assert!(!error.to_string().contains("Slack"), "{error}");
}

/// Acme's installation of T1, its token inside the refresh margin, and a Slack that honours its
/// refresh token after `delay`.
async fn due_for_refresh(
    db: &TestDatabase,
    delay: std::time::Duration,
) -> (TenantId, Installation, FakeSlack) {
    let acme = tenant(db, "Acme").await;
    let due = Grant { expires_at: Some(Utc::now() + Duration::seconds(60)), ..grant("T1", "xoxb-old") };
    store(db).record(acme, &due).await.unwrap();
    let directory = PgTenantDirectory::new(db.pool(), Arc::new(test_keys()));
    let found = directory.resolve(Platform::Slack, &WorkspaceRef::team(ws("T1"))).await.unwrap().unwrap();
    let slack = FakeSlack::start("127.0.0.1", FakeWorkspace::team("T1", "T1 Co"));
    slack.honour_refresh_token("xoxb-old-refresh");
    slack.rotate(43_200);
    slack.refresh_delay(delay);
    (acme, found.installation.expect("installed"), slack)
}

fn oauth(slack: &FakeSlack) -> doorman_adapters::slack::oauth::SlackOAuthClient {
    doorman_adapters::slack::oauth::SlackOAuthClient::new(doorman_adapters::slack::oauth::SlackApp {
        client_id: doorman_testkit::fake_slack::CLIENT_ID.into(),
        client_secret: doorman_testkit::fake_slack::CLIENT_SECRET.into(),
        api_url: slack.api_url(),
        redirect_uri: "http://127.0.0.1:9/slack/oauth/callback".into(),
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_holds_no_row_lock_and_no_connection_while_slack_answers() {
    let db = TestDatabase::create().await;
    let (acme, installation, slack) = due_for_refresh(&db, std::time::Duration::from_millis(1500)).await;
    // One connection: if the refresh kept it across Slack's answer, nothing else could run.
    let one = doorman_adapters::postgres::pool::connect(
        &db.server_url(),
        &doorman_adapters::postgres::PoolSettings { max_size: 1, ..Default::default() },
    );
    let installations = PgInstallations::new(one.clone(), Arc::new(test_keys()), Some(oauth(&slack)));
    let refreshing = tokio::spawn({
        let installation = installation.clone();
        async move { installations.refresh(acme, &installation).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!refreshing.is_finished(), "Slack is still answering");

    let mut owner = db.owner().await;
    diesel::sql_query("SELECT 1 FROM messaging_installations FOR UPDATE NOWAIT")
        .execute(&mut owner)
        .await
        .expect("the installation's row is not locked while Slack answers");
    let unit = tokio::time::timeout(std::time::Duration::from_millis(300), one.unit())
        .await
        .expect("the pool's one connection is free while Slack answers")
        .unwrap();
    unit.rollback().await;

    let refreshed = refreshing.await.unwrap().unwrap();
    assert_ne!(refreshed.bot_token.unwrap().expose(), "xoxb-old");
    assert_eq!(slack.refreshes(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_refreshes_ask_slack_once_and_all_get_its_token() {
    let db = TestDatabase::create().await;
    let (acme, installation, slack) = due_for_refresh(&db, std::time::Duration::from_millis(400)).await;
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), Some(oauth(&slack)));
    let calls = (0..5).map(|_| installations.refresh(acme, &installation));
    let tokens: Vec<String> = futures_util::future::join_all(calls)
        .await
        .into_iter()
        .map(|r| r.unwrap().bot_token.unwrap().expose().to_owned())
        .collect();
    assert_eq!(slack.refreshes(), 1, "a spent refresh token is never spent again");
    assert!(tokens.iter().all(|t| *t == tokens[0] && t != "xoxb-old"), "{tokens:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_slack_refuses_ends_its_lease_so_the_next_caller_asks_at_once() {
    let db = TestDatabase::create().await;
    let (acme, installation, slack) = due_for_refresh(&db, std::time::Duration::ZERO).await;
    slack.forget_refresh_token();
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), Some(oauth(&slack)));
    let refused = installations.refresh(acme, &installation).await.unwrap_err();
    assert!(matches!(refused, doorman_domain::RefreshError::Slack(_)), "{refused:?}");

    slack.honour_refresh_token("xoxb-old-refresh");
    let started = std::time::Instant::now();
    installations.refresh(acme, &installation).await.expect("the next caller refreshes");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "it did not wait out a lease");
}

#[tokio::test]
async fn without_a_slack_app_a_refresh_is_not_configured_not_refused() {
    let db = TestDatabase::create().await;
    let (acme, installation, _slack) = due_for_refresh(&db, std::time::Duration::ZERO).await;
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), None);
    let error = installations.refresh(acme, &installation).await.unwrap_err();
    assert_eq!(error, doorman_domain::RefreshError::NotConfigured);
}

/// A stored token that opens to bytes that are not UTF-8 is a storage failure that names the
/// installation (never the token), not an empty token nor a nameless "not a valid token".
#[tokio::test]
async fn a_stored_token_that_is_not_text_is_an_error_naming_its_installation() {
    let db = TestDatabase::create().await;
    let (acme, installation, slack) = due_for_refresh(&db, std::time::Duration::ZERO).await;
    let not_text = test_keys().seal(
        &[0xff, 0xfe, b'x', b'o', b'x', b'b'],
        doorman_adapters::secrets::SealedIn { tenant: acme, column: "messaging_installations.bot_token" },
    );
    diesel::sql_query("UPDATE messaging_installations SET bot_token = $1")
        .bind::<Text, _>(&not_text)
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    let installations = PgInstallations::new(db.pool(), Arc::new(test_keys()), Some(oauth(&slack)));
    let error = installations.refresh(acme, &installation).await.unwrap_err();
    let doorman_domain::RefreshError::Storage(doorman_domain::StorageError::Unexpected(said)) = &error else {
        panic!("a storage failure: {error:?}");
    };
    assert!(said.contains("installation of team T1"), "names the installation: {said}");
    assert!(said.contains("not UTF-8"), "says what is wrong: {said}");
    assert!(!said.contains(&not_text) && !said.contains("xoxb"), "never the token: {said}");
    assert_eq!(slack.refreshes(), 0, "Slack is not asked with a token that does not read");
}

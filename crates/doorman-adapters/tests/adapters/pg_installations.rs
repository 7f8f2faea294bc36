//! The install flow's storage on real PostgreSQL, as the server's role sees it: links, one-time
//! states bound to a browser, installations sealed and tenant-bound, and their lifecycle.

use std::sync::Arc;

use chrono::{Duration, Utc};
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::{PgInstallStore, PgInstallations, PgTenantDirectory};
use doorman_domain::ports::{InstallStore, Installations, TenantDirectory};
use doorman_domain::{
    Grant, Lifecycle, LinkState, Platform, Recorded, SlackToken, StateRefusal, TakenState, TenantId,
    WorkspaceRef,
};
use doorman_testkit::database::{TestDatabase, test_keys};

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

//! Installing the Slack app, end to end: real server, real database, a fake Slack on
//! loopback, the browser played by an HTTP client that keeps the cookie (or not).

use chrono::{Duration as Ago, Utc};
use diesel_async::RunQueryDsl;
use doorman_domain::TenantId;
use doorman_testkit::fake_slack::{self, FakeSlack, Workspace};

use crate::helpers::{AGENT_SECRET, TestApp, WAIT};

/// The flags that turn installs on, against `slack`, with Doorman reached at `public_url`.
pub fn slack_flags(slack: &FakeSlack, public_url: &str) -> Vec<String> {
    [
        "--slack-client-id",
        fake_slack::CLIENT_ID,
        "--slack-client-secret",
        fake_slack::CLIENT_SECRET,
        "--slack-scopes",
        "commands,chat:write",
        "--public-url",
        public_url,
        "--slack-api-url",
        &slack.api_url(),
        "--slack-authorize-url",
        &slack.authorize_url(),
    ]
    .map(str::to_owned)
    .to_vec()
}

async fn spawn_installing(slack: &FakeSlack) -> TestApp {
    let flags = slack_flags(slack, "https://doorman.example");
    TestApp::spawn_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await
}

/// A tenant with the fake agent set, no workspace linked yet; its install link.
pub async fn customer(app: &TestApp, name: &str) -> (TenantId, String) {
    let op = app.db.operator();
    let tenant = op.create_tenant(name).await;
    op.set_agent(tenant, &app.agent_url(), AGENT_SECRET).await.unwrap();
    let link = op.install_link_until(tenant, Utc::now() + Ago::hours(1)).await;
    (tenant, link)
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// The browser's first two hops: the install link (which sets the cookie and sends it to
/// Slack) and Slack's authorize page (which sends it back). Returns the callback's path and
/// query, and the cookie.
async fn to_callback(app: &TestApp, link: &str) -> (String, String) {
    let http = no_redirects();
    let started = http.get(format!("{}/slack/install/{link}", app.base)).send().await.unwrap();
    assert_eq!(started.status(), 302, "{}", started.text().await.unwrap());
    let cookie = started
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("the browser cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Secure"),
        "{cookie}"
    );
    let authorize = started.headers()["location"].to_str().unwrap().to_owned();
    for param in [
        "client_id=",
        "scope=commands%2Cchat%3Awrite",
        "state=",
        "redirect_uri=https%3A%2F%2Fdoorman.example%2Fslack%2Foauth%2Fcallback",
    ] {
        assert!(authorize.contains(param), "{param} in {authorize}");
    }
    let back = http.get(authorize).send().await.unwrap();
    assert_eq!(back.status(), 302);
    let back = back.headers()["location"].to_str().unwrap();
    let query = back.split_once('?').expect("a query").1.to_owned();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    (query, cookie)
}

/// The browser arrives back at Doorman, with or without its cookie; the status and page.
async fn callback(app: &TestApp, query: &str, cookie: Option<&str>) -> (u16, String) {
    let mut request = no_redirects().get(format!("{}/slack/oauth/callback?{query}", app.base));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

pub async fn install(app: &TestApp, link: &str) -> (u16, String) {
    let (query, cookie) = to_callback(app, link).await;
    callback(app, &query, Some(&cookie)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_links_the_workspace_and_its_events_carry_the_bot_token() {
    let slack = FakeSlack::start("localhost", Workspace::team("T9TK3CUKW", "Acme HQ"));
    let app = spawn_installing(&slack).await;
    let (tenant, link) = customer(&app, "Acme").await;

    let (status, page) = install(&app, &link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Acme HQ") && page.contains("Acme"), "{page}");
    assert!(page.contains("href=\"slack://app?team=T9TK3CUKW&amp;id="), "a link that opens Slack: {page}");
    assert!(page.contains("href=\"https://app.slack.com/client/T9TK3CUKW\""), "{page}");

    assert_eq!(app.event("T9TK3CUKW", "EvInstalled", None).await.status(), 200);
    app.quiesce().await;
    let received = app.agent.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].document["tenant_id"], tenant.to_string());
    assert_eq!(
        received[0].document["authorization"],
        serde_json::json!({"bot_token": slack.current_bot_token(), "bot_user_id": "U0KRQLJ9H",
                           "team_id": "T9TK3CUKW", "enterprise_id": null, "scopes": ["commands", "chat:write"]})
    );

    // Installing again into the same tenant updates the installation: a new token, in the
    // directory's memory once the change's notice is heard.
    let before = app.directory_notices().await;
    let (status, page) = install(&app, &link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("updated"), "{page}");
    app.wait_for_directory_notice_since(before).await;
    assert_eq!(app.event("T9TK3CUKW", "EvAgain", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.received()[1].document["authorization"]["bot_token"], slack.current_bot_token());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_installed_for_one_tenant_is_refused_to_another() {
    let slack = FakeSlack::start("localhost", Workspace::team("TSHARED", "Shared"));
    let app = spawn_installing(&slack).await;
    let (first, first_link) = customer(&app, "First").await;
    let (_second, second_link) = customer(&app, "Second").await;
    assert_eq!(install(&app, &first_link).await.0, 200);

    let (status, page) = install(&app, &second_link).await;
    assert_eq!(status, 409, "{page}");
    let installations = app.db.operator().installations().await;
    assert_eq!(installations.len(), 1);
    assert_eq!(installations[0].tenant, first, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_without_its_cookie_reused_or_expired_is_refused_without_asking_slack() {
    let slack = FakeSlack::start("localhost", Workspace::team("T1", "One"));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;

    // No cookie (another browser, or a forged link).
    let (query, cookie) = to_callback(&app, &link).await;
    let (status, page) = callback(&app, &query, None).await;
    assert_eq!(status, 400, "{page}");
    // Another browser's cookie.
    let (other_query, _) = to_callback(&app, &link).await;
    assert_eq!(callback(&app, &other_query, Some(&cookie)).await.0, 400);
    assert_eq!(slack.exchanges(), 0, "Slack was not asked");

    // The right browser completes it once; the same state again is refused.
    assert_eq!(callback(&app, &query, Some(&cookie)).await.0, 200);
    assert_eq!(callback(&app, &query, Some(&cookie)).await.0, 400, "a state is one-time");
    assert_eq!(slack.exchanges(), 1);

    // Ten minutes pass (moved in the database: the check is the database's clock).
    let (query, cookie) = to_callback(&app, &link).await;
    diesel::sql_query("UPDATE messaging_install_states SET expires_at = now() - interval '1 second' WHERE consumed_at IS NULL")
        .execute(&mut app.db.owner().await)
        .await
        .unwrap();
    let (status, page) = callback(&app, &query, Some(&cookie)).await;
    assert_eq!(status, 400);
    assert!(page.contains("ten minutes"), "{page}");
    assert_eq!(slack.exchanges(), 1, "Slack was not asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_install_and_a_slack_refusal_store_nothing() {
    let slack = FakeSlack::start("localhost", Workspace::team("T1", "One"));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;

    slack.deny(true);
    let (query, cookie) = to_callback(&app, &link).await;
    let (status, page) = callback(&app, &query, Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(page.contains("cancelled"), "{page}");
    assert_eq!(callback(&app, &query, Some(&cookie)).await.0, 400, "the state was consumed");
    slack.deny(false);

    slack.refuse_with(Some("invalid_code"));
    let (status, page) = install(&app, &link).await;
    assert_eq!(status, 502);
    assert!(page.contains("invalid_code"), "{page}");
    assert!(app.db.operator().installations().await.is_empty(), "nothing stored");
    assert_eq!(app.event("T1", "EvNotInstalled", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.requests(), 0, "the workspace was not linked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_expired_links_say_so_and_installs_off_is_404() {
    let slack = FakeSlack::start("localhost", Workspace::team("T1", "One"));
    let app = spawn_installing(&slack).await;
    let (tenant, _) = customer(&app, "Acme").await;
    let expired = app.db.operator().install_link_until(tenant, Utc::now() - Ago::seconds(1)).await;
    let http = no_redirects();
    for (link, status) in [("not-a-link", 404), (expired.as_str(), 410)] {
        let response = http.get(format!("{}/slack/install/{link}", app.base)).send().await.unwrap();
        assert_eq!(response.status(), status);
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    }
    assert_eq!(slack.authorizations(), 0);

    let off = TestApp::spawn().await;
    for path in ["/slack/install/x", "/slack/oauth/callback?code=c&state=s"] {
        assert_eq!(http.get(format!("{}{path}", off.base)).send().await.unwrap().status(), 404, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uninstall_event_is_dispatched_then_the_team_is_forgotten() {
    let slack = FakeSlack::start("localhost", Workspace::team("TBYE", "Bye"));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    assert_eq!(install(&app, &link).await.0, 200);

    let uninstalled =
        crate::helpers::event_body("TBYE", "EvUninstalled").replace("app_mention", "app_uninstalled");
    assert_eq!(
        app.post("/slack/events", "application/json", uninstalled.as_bytes(), None).await.status(),
        200
    );
    app.quiesce().await;
    assert_eq!(app.agent.count_for("EvUninstalled"), 1, "the agent had it first");
    assert!(app.db.operator().installations().await.is_empty());

    // The workspace is no longer linked: its events are ignored (200, nothing claimed).
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        assert_eq!(app.event("TBYE", "EvAfter", None).await.status(), 200);
        if !app.receipts().await.iter().any(|r| r.event_id == "EvAfter") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still routed");
        diesel::sql_query("DELETE FROM messaging_event_receipts WHERE external_event_id = 'EvAfter'")
            .execute(&mut app.db.owner().await)
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_bot_token_is_forgotten_and_no_longer_handed_out() {
    let slack = FakeSlack::start("localhost", Workspace::team("TREV", "Rev"));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    assert_eq!(install(&app, &link).await.0, 200);

    let revoked = serde_json::json!({
        "token": "x", "team_id": "TREV", "api_app_id": "A0KRD7HC3", "type": "event_callback",
        "event_id": "EvRevoked", "event_time": 1,
        "event": {"type": "tokens_revoked", "tokens": {"oauth": ["U1234"], "bot": ["U0KRQLJ9H"]}},
        "authorizations": [{"team_id": "TREV", "enterprise_id": null, "is_enterprise_install": false}]
    });
    assert_eq!(
        app.post("/slack/events", "application/json", revoked.to_string().as_bytes(), None).await.status(),
        200
    );
    app.quiesce().await;
    let installations = app.db.operator().installations().await;
    assert!(!installations[0].has_bot_token);

    app.until_answered("TREV", 200).await;
    app.quiesce().await;
    let last = app.agent.received().pop().unwrap();
    assert!(last.document.get("authorization").is_none(), "{}", last.document);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotating_token_is_refreshed_once_under_twenty_concurrent_dispatches() {
    let slack = FakeSlack::start("localhost", Workspace::team("TROT", "Rot"));
    slack.rotate(60); // expires within the five minutes: refreshed before the first dispatch
    slack.refresh_delay(std::time::Duration::from_millis(200));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    assert_eq!(install(&app, &link).await.0, 200);
    slack.rotate(43_200);

    let sends = (0..20).map(|i| {
        let app = &app;
        async move { app.event("TROT", &format!("EvRot{i}"), None).await.status().as_u16() }
    });
    assert!(futures_util::future::join_all(sends).await.iter().all(|s| *s == 200));
    app.quiesce().await;
    assert_eq!(slack.refreshes(), 1, "one refresh for twenty dispatches");
    let tokens: std::collections::HashSet<String> = app
        .agent
        .received()
        .iter()
        .map(|r| r.document["authorization"]["bot_token"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tokens, [slack.current_bot_token()].into(), "every dispatch carried the fresh token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_slack_refuses_fails_the_dispatch_as_token_refresh_failed() {
    let slack = FakeSlack::start("localhost", Workspace::team("TRF", "Rf"));
    slack.rotate(60);
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    assert_eq!(install(&app, &link).await.0, 200);
    // Tokens live 60 s, inside the refresh margin, so every dispatch refreshes first; the
    // stored refresh token no longer works (rotated elsewhere).
    slack.forget_refresh_token();
    assert_eq!(app.event("TRF", "EvNoRefresh", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.requests(), 0, "nothing sent with an expired token");
    let failed = app.db.operator().failed().await;
    assert!(failed[0].failure.as_ref().unwrap().reason.starts_with("token_refresh_failed"), "{failed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_whose_refresh_token_is_gone_is_never_sent() {
    let slack = FakeSlack::start("localhost", Workspace::team("TEX", "Ex"));
    slack.rotate(60);
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    assert_eq!(install(&app, &link).await.0, 200);
    // The row changes under the server's cached copy, which still says "refreshable": the
    // refresh re-reads the row under its lock and must not fall back to the expired token.
    diesel::sql_query("UPDATE messaging_installations SET refresh_token = NULL, token_expires_at = now()")
        .execute(&mut app.db.owner().await)
        .await
        .unwrap();
    assert_eq!(app.event("TEX", "EvExpired", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.requests(), 0, "nothing sent with an expired token");
    assert_eq!(slack.refreshes(), 0);
    let failed = app.db.operator().failed().await;
    // Whether the cached copy was already reloaded (the domain refuses) or not (the refresh
    // re-reads the row and refuses), the failure says why.
    assert!(failed[0].failure.as_ref().unwrap().reason.starts_with("token_refresh_failed"), "{failed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_installs_do_not_grow_the_states_table() {
    let slack = FakeSlack::start("localhost", Workspace::team("TGROW", "Grow"));
    let app = spawn_installing(&slack).await;
    let (_, link) = customer(&app, "Acme").await;
    for _ in 0..30 {
        assert_eq!(install(&app, &link).await.0, 200);
    }
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let states: Count = diesel::sql_query("SELECT count(*) AS n FROM messaging_install_states")
        .get_result(&mut app.db.owner().await)
        .await
        .unwrap();
    assert!(states.n <= 2, "each start deletes the spent states: {} left", states.n);
    let pruned = app
        .db
        .maintenance()
        .await
        .prune_install_states(std::num::NonZeroU32::new(10).unwrap())
        .await
        .unwrap();
    assert_eq!(pruned as i64, states.n, "the operator command clears the rest");
}

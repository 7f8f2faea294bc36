//! The operator console end to end: `doorman admin serve` on a random port and a fresh
//! database, driven by Debian's headless Chromium through WebDriver as a support person and as
//! a customer would, and by plain HTTP where what matters is what a browser is refused.
//! `just browser` and `just axe` (both run by `just test`) install Chromium and axe-core.

use std::time::Duration;

use fantoccini::{Client, Locator};
use reqwest::header;
use serde_json::{Value, json};

use crate::admin_api::{Admin, key};
use crate::browser::{Chromedriver, free_port};
use crate::helpers::{
    AGENT_SECRET, WAIT, directory_notices, http_client, post_event, serve_config,
    wait_for_directory_notice_since,
};
use doorman_testkit::FakeAgent;
use doorman_testkit::database::TestDatabase;

/// What the console sends with every page.
const CSP: &str = doorman_app::operator::console::CONTENT_SECURITY_POLICY;

/// A tenant made over the API, with a workspace, an agent, and payloads kept.
async fn onboarded(admin: &Admin, root: &str, name: &str, team: &str, agent: &str) -> String {
    let tenant = admin.tenant(root, name).await;
    let path = |rest: &str| format!("/admin/v1/tenants/{tenant}{rest}");
    assert_eq!(admin.post(&path("/workspaces"), root, json!({"team_id": team})).await.status, 201);
    let set = admin.put(&path("/agent"), root, json!({"url": agent, "signing_secret": AGENT_SECRET})).await;
    assert_eq!(set.status, 200, "{set:?}");
    assert_eq!(admin.put(&path("/retain-payloads"), root, json!({"enabled": true})).await.status, 200);
    tenant
}

/// `doorman admin serve` with private agents allowed, at an address of its own that is also
/// its `DOORMAN_CONSOLE_URL` (so sign-in links are whole and lead to it), and `flags`.
async fn console_at_its_address(db: &TestDatabase, flags: &[&str]) -> Admin {
    let bind = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{bind}");
    let own = ["--agent-allow-private", "true", "--bind", &bind, "--console-url", &url];
    Admin::start(db, &[&own, flags].concat()).await
}

/// An id as one segment of a URL's path.
fn segment(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The event's status as the admin API reads it, once it is `status`.
async fn until_status(admin: &Admin, root: &str, tenant: &str, event: &str, status: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let read = admin.get(&format!("/admin/v1/tenants/{tenant}/events/{}", segment(event)), root).await;
        if read.status == 200 && read.body["status"] == status {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{event} never {status}: {read:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The element, once the page has it (a click's navigation may still be under way).
async fn find(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|_| panic!("{css} on the page"))
}

/// Waits until the browser is at `expected` (path and query), after a click or a form.
async fn arrive(browser: &Client, expected: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let now = path(browser).await;
        if now == expected {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "at {now}, not {expected}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first cell of each of the table's rows.
async fn text_of_rows(browser: &Client) -> Vec<String> {
    let mut cells = Vec::new();
    for cell in browser.find_all(Locator::Css("tbody tr td:first-child")).await.unwrap() {
        cells.push(cell.text().await.unwrap());
    }
    cells
}

async fn text(browser: &Client, css: &str) -> String {
    find(browser, css).await.text().await.unwrap()
}

async fn click(browser: &Client, css: &str) {
    find(browser, css).await.click().await.unwrap();
}

/// Signs `browser` in with `key` on the sign-in page, as a person types it.
async fn sign_in(browser: &Client, base: &str, key: &str) {
    browser.goto(&format!("{base}/console/sign-in")).await.unwrap();
    browser.find(Locator::Id("key")).await.unwrap().send_keys(key).await.unwrap();
    click(browser, "form button[type=submit]").await;
}

/// A page's path, once the browser has followed the redirects.
async fn path(browser: &Client) -> String {
    let url = browser.current_url().await.unwrap();
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_support_session_pauses_a_tenant_replays_its_failure_and_reads_it_all_in_the_audit() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    onboarded(&admin, &root, "Globex", "TGLOBEX", agent.url()).await;
    let tenant = onboarded(&admin, &root, "Acme Support", "TSUPPORT", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    // An event the agent fails.
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &serving, "TSUPPORT", "EvConsoleFail").await, 200);
    until_status(&admin, &root, &tenant, "EvConsoleFail", "failed").await;
    agent.answer_with(200);

    let driver = Chromedriver::start().await;
    let browser = driver.browser("support").await;
    sign_in(&browser, &admin.base, &root).await;
    arrive(&browser, "/console/tenants").await;

    // Find the tenant by its Slack team id, by the start of its id, and by part of its name.
    let search = async |text: &str| {
        let field = find(&browser, "#search").await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
        click(&browser, "form[role=search] button").await;
        arrive(&browser, &format!("/console/tenants?search={text}")).await;
        text_of_rows(&browser).await
    };
    assert_eq!(search("TSUPPORT").await, ["Acme Support"], "a Slack team id");
    assert_eq!(search(&tenant[..8]).await, ["Acme Support"], "the start of the id");
    assert_eq!(search("support").await, ["Acme Support"], "part of the name");
    browser.find(Locator::LinkText("Acme Support")).await.unwrap().click().await.unwrap();
    arrive(&browser, &format!("/console/tenants/{tenant}")).await;
    assert_eq!(text(&browser, "h1").await, "Acme Support");

    // Pause its agent (the page asks first): the serving process hears it and answers 503.
    let metrics = format!("http://{}", server.metrics_addr());
    let notices = directory_notices(&http_client(), &metrics).await;
    click(&browser, "#pause").await;
    browser.accept_alert().await.unwrap();
    arrive(&browser, &format!("/console/tenants/{tenant}?done=paused")).await;
    assert!(text(&browser, ".notice").await.starts_with("Agent paused"));
    wait_for_directory_notice_since(&http_client(), &metrics, notices).await;
    assert_eq!(post_event(&http_client(), &serving, "TSUPPORT", "EvConsolePaused").await, 503);
    assert!(text(&browser, "#agent-state").await.contains("paused"));
    click(&browser, "#resume").await;
    arrive(&browser, &format!("/console/tenants/{tenant}?done=resumed")).await;
    assert_eq!(text(&browser, ".notice").await, "Agent resumed.");

    // The failed event, its failure, and a replay of it, followed to the end.
    browser.find(Locator::LinkText("Failed events")).await.unwrap().click().await.unwrap();
    arrive(&browser, &format!("/console/tenants/{tenant}/events?state=failed")).await;
    let failed = text(&browser, "tbody").await;
    assert!(failed.contains("EvConsoleFail") && failed.contains("agent answered HTTP 500"), "{failed}");
    browser.find(Locator::LinkText("EvConsoleFail")).await.unwrap().click().await.unwrap();
    arrive(&browser, &format!("/console/tenants/{tenant}/events/EvConsoleFail")).await;
    assert_eq!(text(&browser, "#event-status").await, "failed");
    // The failed attempt, with what the agent answered (its status and the start of its body).
    let attempts = text(&browser, "#attempts tbody").await;
    for said in ["live", "failed (status)", "500", " ms", r#"{"error":"the agent answered 500"}"#] {
        assert!(attempts.contains(said), "{said} in {attempts}");
    }
    click(&browser, "#replay").await;
    until_job_finished(&browser).await;
    assert!(text(&browser, "tbody").await.contains("sent"));
    assert_eq!(text(&browser, "#job-progress").await, "1 of 1 done: 1 succeeded (1 handled)");
    browser.find(Locator::LinkText("EvConsoleFail")).await.unwrap().click().await.unwrap();
    arrive(&browser, &format!("/console/tenants/{tenant}/events/EvConsoleFail")).await;
    assert_eq!(text(&browser, "#event-status").await, "handled");
    let attempts = text(&browser, "#attempts tbody").await;
    assert!(attempts.contains("replay (job)") && attempts.contains("200"), "{attempts}");
    assert_eq!(agent.count_for("EvConsoleFail"), 1, "accepted once: by the replay");

    // All of it in the audit trail, by this key.
    browser.goto(&format!("{}/console/audit?tenant={tenant}", admin.base)).await.unwrap();
    let trail = text(&browser, "tbody").await;
    for action in ["agent.pause", "agent.resume", "events.replay", "event.replay"] {
        assert!(trail.contains(action), "{action} in {trail}");
    }

    // Signing out ends the session: the console asks for a sign-in again.
    click(&browser, ".sign-out button").await;
    arrive(&browser, "/console/sign-in").await;
    browser.goto(&format!("{}/console/tenants/{tenant}", admin.base)).await.unwrap();
    arrive(&browser, "/console/sign-in").await;
    browser.close().await.unwrap();
    server.shutdown().await;
}

/// Reloads the replay job's page until the job has finished.
async fn until_job_finished(browser: &Client) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while text(browser, "#job-state").await != "finished" {
        assert!(tokio::time::Instant::now() < deadline, "the replay job never finished");
        tokio::time::sleep(Duration::from_millis(200)).await;
        browser.refresh().await.unwrap();
    }
}

/// A key's id from its text (`dmk_<id>_<secret>`).
fn key_id(key: &str) -> uuid::Uuid {
    uuid::Uuid::parse_str(key.split('_').nth(1).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_signs_in_once_with_a_link_sees_only_its_tenant_and_cannot_write_read_only() {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let own = onboarded(&admin, &root, "Customer Co", "TCUSTOMER", agent.url()).await;
    let other = onboarded(&admin, &root, "Someone Else", "TELSE", agent.url()).await;
    let portal = key(&db, Some(&own), true).await;
    let portal_doc = format!("/admin/v1/keys/{}", key_id(&portal));
    assert_eq!(admin.get(&portal_doc, &root).await.body["last_used_at"], Value::Null, "never used yet");
    let made = admin.post(&format!("{portal_doc}/sign-in-links"), &root, json!({})).await;
    assert_eq!(made.status, 201, "{made:?}");
    assert_eq!(
        (made.body["tenant_id"].as_str(), made.body["read_only"].as_bool()),
        (Some(own.as_str()), Some(true))
    );
    // The link is whole: DOORMAN_CONSOLE_URL, then its path, ready to paste to the customer.
    let link = made.body["url"].as_str().unwrap().to_owned();
    assert_eq!(link, format!("{}{}", admin.base, made.body["path"].as_str().unwrap()));
    // A key for every tenant gets no link: whoever holds it signs in with it.
    assert_eq!(
        admin.post(&format!("/admin/v1/keys/{}/sign-in-links", key_id(&root)), &root, json!({})).await.status,
        409
    );

    let driver = Chromedriver::start().await;
    let (customer, second) = (driver.browser("customer").await, driver.browser("second").await);
    customer.goto(&link).await.unwrap();
    click(&customer, "form button[type=submit]").await;
    arrive(&customer, &format!("/console/tenants/{own}")).await;
    assert_eq!(text(&customer, "h1").await, "Customer Co");
    // Support sees that the customer opened their portal: the session's requests are its key's use.
    let used = admin.get(&portal_doc, &root).await.body["last_used_at"].clone();
    assert!(used.is_string(), "the portal key's last use: {used}");
    let nav = text(&customer, "header nav").await;
    assert!(nav.contains("My tenant") && !nav.contains("Keys") && !nav.contains("Tenants"), "{nav}");
    // Read-only: no button that writes.
    for form in [
        "/agent/pause",
        "/agent",
        "/retain-payloads",
        "/redelivery",
        "/read-only-portals-read-payloads",
        "/install-links",
        "/workspaces",
    ] {
        let found = customer.find_all(Locator::Css(&format!("form[action$='{form}']"))).await.unwrap();
        assert!(found.is_empty(), "a read-only session sees no {form} form");
    }

    // Another tenant's pages, by editing the URL: 404, as a tenant that does not exist.
    for page in [
        format!("/console/tenants/{other}"),
        format!("/console/tenants/{other}/events?state=failed"),
        format!("/console/audit?tenant={other}"),
    ] {
        customer.goto(&format!("{}{page}", admin.base)).await.unwrap();
        assert_eq!(text(&customer, "h1").await, "Not Found", "{page}");
    }
    customer.goto(&format!("{}/console/tenants", admin.base)).await.unwrap();
    arrive(&customer, &format!("/console/tenants/{own}")).await;
    customer.goto(&format!("{}/console/keys", admin.base)).await.unwrap();
    assert_eq!(text(&customer, "h1").await, "Forbidden");

    // The link is spent: a second browser is refused.
    second.goto(&link).await.unwrap();
    click(&second, "form button[type=submit]").await;
    assert!(text(&second, ".problem").await.contains("not valid any more"));
    second.goto(&format!("{}/console/tenants/{own}", admin.base)).await.unwrap();
    arrive(&second, "/console/sign-in").await;

    // Writing with the session itself, its token and all, is refused: read-only.
    let cookie = customer.get_named_cookie("doorman_console").await.unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(cookie.same_site().map(|s| s.to_string()), Some("Strict".to_owned()));
    customer.goto(&format!("{}/console/tenants/{own}", admin.base)).await.unwrap();
    let csrf =
        customer.find(Locator::Css("input[name=csrf]")).await.unwrap().attr("value").await.unwrap().unwrap();
    let pause = http_client()
        .post(format!("{}/console/tenants/{own}/agent/pause", admin.base))
        .header(header::COOKIE, format!("doorman_console={}", cookie.value()))
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(pause.status(), 403);
    let agent_doc = admin.get(&format!("/admin/v1/tenants/{own}/agent"), &root).await;
    assert_eq!(agent_doc.body["paused"], false);
    customer.close().await.unwrap();
    second.close().await.unwrap();
}

/// A plain HTTP client holding a console session, as a browser would.
pub(crate) struct Session {
    base: String,
    http: reqwest::Client,
    cookie: String,
}

impl Session {
    pub(crate) async fn sign_in(base: &str, key: &str) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let answer = http
            .post(format!("{base}/console/sign-in"))
            .header(header::ORIGIN, base)
            .form(&[("key", key)])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 303);
        let set = answer.headers()[header::SET_COOKIE].to_str().unwrap().to_owned();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
            assert!(set.contains(attribute), "{attribute} in {set}");
        }
        let cookie = set.split(';').next().unwrap().to_owned();
        Self { base: base.to_owned(), http, cookie }
    }

    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .header(header::COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        origin: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request =
            self.http.post(format!("{}{path}", self.base)).header(header::COOKIE, &self.cookie).form(form);
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        request.send().await.unwrap()
    }

    /// The form token on a page.
    pub(crate) async fn csrf(&self, path: &str) -> String {
        let page = self.get(path).await.text().await.unwrap();
        let at = page.find("name=\"csrf\" value=\"").expect("a form token") + 19;
        page[at..at + 64].to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_with_their_key_forms_need_this_origin_and_the_token_and_every_page_has_the_csp() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Acme", "TSESSION", agent.url()).await;
    let support = key(&db, None, false).await;
    let session = Session::sign_in(&admin.base, &support).await;

    // The CSP (and its companions) on every page, the error pages and the sign-in pages too.
    for page in [
        "/console/tenants".to_owned(),
        format!("/console/tenants/{tenant}"),
        format!("/console/tenants/{tenant}/events?state=handled"),
        format!("/console/tenants/{tenant}/replays"),
        "/console/audit".to_owned(),
        "/console/keys".to_owned(),
        "/console/sign-in".to_owned(),
        "/console/sign-in/not-a-link".to_owned(),
        "/console/no-such-page".to_owned(),
        format!("/console/tenants/{tenant}/events/EvNone"),
    ] {
        let answer = session.get(&page).await;
        let headers = answer.headers();
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP, "{page}");
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY", "{page}");
        assert_eq!(headers[header::REFERRER_POLICY], "same-origin", "{page}");
        assert_eq!(headers[header::CACHE_CONTROL], "no-store", "{page}");
        assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/html"), "{page}");
        assert!(!answer.text().await.unwrap().contains("<script>"), "{page}: no inline script");
    }

    // A form from another origin, or without the session's token, is refused; nothing changes.
    let pause = format!("/console/tenants/{tenant}/agent/pause");
    let csrf = session.csrf(&format!("/console/tenants/{tenant}")).await;
    let evil = Some("https://evil.example");
    assert_eq!(session.post(&pause, evil, &[("csrf", &csrf)]).await.status(), 403, "another origin");
    assert_eq!(session.post(&pause, Some(&admin.base), &[]).await.status(), 403, "no token");
    assert_eq!(session.post(&pause, Some(&admin.base), &[("csrf", &"0".repeat(64))]).await.status(), 403);
    // Every form the console takes from a signed-in session needs the token, not only this one
    // (the sign-in forms, before a session, are held by the origin check alone).
    let unknown = "00000000-0000-4000-8000-000000000000";
    for form in [
        "/console/sign-out".to_owned(),
        "/console/tenants".to_owned(),
        format!("/console/tenants/{tenant}/rename"),
        format!("/console/tenants/{tenant}/delete"),
        format!("/console/tenants/{tenant}/workspaces"),
        format!("/console/tenants/{tenant}/workspaces/{unknown}/unlink"),
        format!("/console/tenants/{tenant}/agent"),
        format!("/console/tenants/{tenant}/agent/resume"),
        format!("/console/tenants/{tenant}/retain-payloads"),
        format!("/console/tenants/{tenant}/redelivery"),
        format!("/console/tenants/{tenant}/read-only-portals-read-payloads"),
        format!("/console/tenants/{tenant}/install-links"),
        format!("/console/tenants/{tenant}/events/EvAny/replay"),
        format!("/console/tenants/{tenant}/replays"),
        format!("/console/tenants/{tenant}/replays/preview"),
        "/console/keys".to_owned(),
        format!("/console/keys/{unknown}/revoke"),
        format!("/console/keys/{unknown}/sign-in-link"),
    ] {
        let refused = session.post(&form, Some(&admin.base), &[("name", "x"), ("state", "failed")]).await;
        assert_eq!(refused.status(), 403, "{form} without the session's token");
    }
    let agent_doc = admin.get(&format!("/admin/v1/tenants/{tenant}/agent"), &root).await;
    assert_eq!(agent_doc.body["paused"], false, "no refused form changed anything");
    let done = session.post(&pause, Some(&admin.base), &[("csrf", &csrf)]).await;
    assert_eq!(
        (done.status().as_u16(), done.headers()[header::LOCATION].to_str().unwrap()),
        (303, &*format!("/console/tenants/{tenant}?done=paused"))
    );
    // Signing in from another origin is refused too (a login forced on someone's browser).
    let forced = session
        .http
        .post(format!("{}/console/sign-in", admin.base))
        .header(header::ORIGIN, "https://evil.example")
        .form(&[("key", support.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(forced.status(), 403);

    // A wrong key signs nobody in, and is counted as the API counts it.
    let wrong = session
        .http
        .post(format!("{}/console/sign-in", admin.base))
        .form(&[("key", "dmk_nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get(header::SET_COOKIE).is_none());

    // Revoking the key ends its session on the next request.
    assert_eq!(session.get("/console/tenants").await.status(), 200);
    let revoked = admin
        .call(reqwest::Method::DELETE, &format!("/admin/v1/keys/{}", key_id(&support)), Some(&root), None)
        .await;
    assert_eq!(revoked.status, 204);
    let after = session.get("/console/tenants").await;
    assert_eq!(
        (after.status().as_u16(), after.headers()[header::LOCATION].to_str().unwrap()),
        (303, "/console/sign-in")
    );

    // Signing out ends a session for good, even with the cookie kept.
    let other = Session::sign_in(&admin.base, &root).await;
    let csrf = other.csrf("/console/tenants").await;
    assert_eq!(other.post("/console/sign-out", Some(&admin.base), &[("csrf", &csrf)]).await.status(), 303);
    assert_eq!(other.get("/console/tenants").await.status(), 303);
    // Nothing of a session or a key is stored in clear.
    let keys_page: Value = json!(admin.get("/admin/v1/keys", &root).await.body);
    assert!(!keys_page.to_string().contains(other.cookie.split('=').nth(1).unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_turns_redelivery_on_with_a_schedule_is_told_why_one_is_refused_and_turns_it_off() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    let page = format!("/console/tenants/{tenant}");
    let form = format!("{page}/redelivery");
    let redelivery =
        async || admin.get(&format!("/admin/v1/tenants/{tenant}"), &root).await.body["redelivery"].clone();
    let session = Session::sign_in(&admin.base, &root).await;

    let shown = session.get(&page).await.text().await.unwrap();
    assert!(shown.contains("Redelivery: off."), "{shown}");
    assert!(shown.contains(&format!("action=\"{form}\"")), "a writer sees the form");
    assert!(shown.contains("value=\"5s,5m,30m,2h,5h,10h,10h\""), "prefilled with the standard schedule");

    let csrf = session.csrf(&page).await;
    let origin = Some(admin.base.as_str());
    let on = session.post(&form, origin, &[("csrf", &csrf), ("enabled", "on"), ("schedule", "5s, 5m")]).await;
    assert_eq!(
        (on.status().as_u16(), on.headers()[header::LOCATION].to_str().unwrap()),
        (303, &*format!("{page}?done=redelivery-on"))
    );
    assert_eq!(redelivery().await, json!({"schedule": "5s,5m", "seconds": [5, 300]}));
    let shown = session.get(&format!("{page}?done=redelivery-on")).await.text().await.unwrap();
    assert!(shown.contains("Redelivery: <code>5s,5m</code>"), "{shown}");
    assert!(shown.contains("Redelivery is on"), "the notice");
    let listing = session.get("/console/tenants").await.text().await.unwrap();
    assert!(listing.contains("<code>5s,5m</code>"), "{listing}");

    // A refused schedule: the page says why, and nothing changed.
    let refused =
        session.post(&form, origin, &[("csrf", &csrf), ("enabled", "on"), ("schedule", "5s,25h")]).await;
    assert_eq!(refused.status(), 422);
    let said = refused.text().await.unwrap();
    assert!(said.contains("schedule") && said.contains("above 24 hours"), "{said}");
    assert_eq!(redelivery().await["schedule"], "5s,5m", "unchanged");

    let off = session.post(&form, origin, &[("csrf", &csrf), ("enabled", "off")]).await;
    assert_eq!(off.headers()[header::LOCATION].to_str().unwrap(), format!("{page}?done=redelivery-off"));
    assert_eq!(redelivery().await, Value::Null);
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await.body;
    assert_eq!(
        (&trail["items"][0]["action"], &trail["items"][0]["target"]),
        (&json!("tenant.redelivery"), &json!("off"))
    );
    assert_eq!(trail["items"][1]["target"], "5s,5m");

    // A read-only session sees the setting and no form, and its post is refused.
    let reader = Session::sign_in(&admin.base, &key(&db, None, true).await).await;
    let shown = reader.get(&page).await.text().await.unwrap();
    assert!(shown.contains("Redelivery: off.") && !shown.contains(&format!("action=\"{form}\"")), "{shown}");
    let csrf = reader.csrf(&page).await;
    let forbidden = reader.post(&form, origin, &[("csrf", &csrf), ("enabled", "on")]).await;
    assert_eq!(forbidden.status(), 403);
    assert_eq!(redelivery().await, Value::Null, "unchanged");
}

/// A console sign-in with `key`, sending `headers` (an `Origin`, forwarded headers).
async fn sign_in_with(base: &str, key: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut request = http.post(format!("{base}/console/sign-in")).form(&[("key", key)]);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// The session cookie a sign-in set: `name=value`, and its attributes.
fn session_cookie(signed_in: &reqwest::Response) -> (String, Vec<String>) {
    assert_eq!(signed_in.status(), 303, "signed in");
    let set = signed_in.headers()[header::SET_COOKIE].to_str().unwrap();
    let mut parts = set.split(';').map(|part| part.trim().to_owned());
    let pair = parts.next().unwrap();
    (pair, parts.collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_need_the_consoles_scheme_host_and_port_and_forwarded_headers_count_only_from_trusted_proxies()
{
    let db = TestDatabase::create().await;
    let root = key(&db, None, false).await;
    let forwarded = |origin: &'static str| {
        [("x-forwarded-host", "console.example"), ("x-forwarded-proto", "https"), ("origin", origin)]
    };

    // Trusting no proxy (the default), the origin is the request's own Host and scheme,
    // whatever a client forwards.
    let direct = Admin::launch(&db, &[]).await;
    let own = direct.base.as_str();
    assert_eq!(sign_in_with(own, &root, &forwarded("https://console.example")).await.status(), 403);
    let rfc7239 = [("forwarded", "host=console.example;proto=https"), ("origin", "https://console.example")];
    assert_eq!(sign_in_with(own, &root, &rfc7239).await.status(), 403);
    let https_here = own.replace("http://", "https://");
    assert_eq!(sign_in_with(own, &root, &[("origin", &https_here)]).await.status(), 403, "another scheme");
    let (pair, attributes) = session_cookie(&sign_in_with(own, &root, &[("origin", own)]).await);
    assert!(pair.starts_with("doorman_console="), "plain http keeps the plain name: {pair}");
    assert!(attributes.contains(&"Path=/console".to_owned()) && !attributes.contains(&"Secure".to_owned()));

    // From a trusted proxy, what it forwards is where the browser was: https, so the cookie
    // is __Host- (Secure, Path=/, no Domain).
    let proxied = Admin::launch(&db, &["--trusted-proxies", "10.0.0.0/8, 127.0.0.1"]).await;
    let behind = proxied.base.as_str();
    let (pair, attributes) =
        session_cookie(&sign_in_with(behind, &root, &forwarded("https://console.example")).await);
    assert!(pair.starts_with("__Host-doorman_console="), "{pair}");
    for attribute in ["Secure", "Path=/", "HttpOnly", "SameSite=Strict"] {
        assert!(attributes.contains(&attribute.to_owned()), "{attribute} in {attributes:?}");
    }
    assert!(!attributes.iter().any(|a| a.starts_with("Domain")), "{attributes:?}");
    for origin in ["http://console.example", "https://console.example:8443", "https://evil.example"] {
        let refused = sign_in_with(behind, &root, &forwarded(origin)).await;
        assert_eq!(refused.status(), 403, "{origin}");
    }

    // DOORMAN_CONSOLE_URL is the origin, above what any proxy says; http against it is another
    // origin.
    let fixed =
        Admin::launch(&db, &["--console-url", "https://admin.example", "--trusted-proxies", "127.0.0.1"])
            .await;
    let at = fixed.base.as_str();
    for origin in ["http://admin.example", "https://admin.example:8443"] {
        assert_eq!(sign_in_with(at, &root, &[("origin", origin)]).await.status(), 403, "{origin}");
    }
    assert_eq!(sign_in_with(at, &root, &forwarded("https://console.example")).await.status(), 403);
    let (pair, _) = session_cookie(&sign_in_with(at, &root, &[("origin", "https://admin.example")]).await);
    let value = pair.strip_prefix("__Host-doorman_console=").expect("the __Host- cookie");
    // On https the session is read from the __Host- cookie alone.
    let get = |cookie: String| {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        async move {
            http.get(format!("{at}/console/tenants")).header(header::COOKIE, cookie).send().await.unwrap()
        }
    };
    let page = get(format!("__Host-doorman_console={value}")).await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let csrf = &page[page.find("name=\"csrf\" value=\"").unwrap() + 19..][..64];
    assert_eq!(get(format!("doorman_console={value}")).await.status(), 303, "the plain name is not read");
    // A changing form with the session and its token, from http: refused, nothing made.
    let create = |origin: &'static str| {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        http.post(format!("{at}/console/tenants"))
            .header(header::COOKIE, format!("__Host-doorman_console={value}"))
            .header(header::ORIGIN, origin)
            .form(&[("csrf", csrf), ("name", "Forged")])
            .send()
    };
    assert_eq!(create("http://admin.example").await.unwrap().status(), 403);
    let listed = fixed.get("/admin/v1/tenants?name=Forged", &root).await;
    assert_eq!(listed.body["items"], json!([]), "nothing made");
    assert_eq!(create("https://admin.example").await.unwrap().status(), 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_slack_app_or_the_consoles_address_no_install_or_sign_in_link_is_offered_and_why_is_said()
{
    let db = TestDatabase::create().await;
    let bare = Admin::launch(&db, &["--agent-allow-private", "true"]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&bare, &root, "Acme", "TBARE", agent.url()).await;
    let portal = key(&db, Some(&tenant), true).await;
    let session = Session::sign_in(&bare.base, &root).await;

    // Installs off: no install-link form on the tenant's page, and why.
    let page = session.get(&format!("/console/tenants/{tenant}")).await.text().await.unwrap();
    assert!(!page.contains("/install-links\""), "no install-link form");
    assert!(page.contains("id=\"installs-off\"") && page.contains("SLACK_CLIENT_ID"), "{page}");

    // No console address: no sign-in-link button, and why; asked anyway, 409 saying what to set.
    let link_form = format!("/console/keys/{}/sign-in-link", key_id(&portal));
    let page = session.get("/console/keys").await.text().await.unwrap();
    assert!(!page.contains(&link_form), "no sign-in-link form");
    assert!(page.contains("id=\"sign-in-links-off\"") && page.contains("DOORMAN_CONSOLE_URL"), "{page}");
    let csrf = session.csrf("/console/keys").await;
    let asked = session.post(&link_form, Some(&bare.base), &[("csrf", &csrf)]).await;
    assert_eq!(asked.status(), 409);
    assert!(asked.text().await.unwrap().contains("DOORMAN_CONSOLE_URL"));
    let api = bare.post(&format!("/admin/v1/keys/{}/sign-in-links", key_id(&portal)), &root, json!({})).await;
    assert_eq!(
        (api.status.as_u16(), api.body["type"].as_str()),
        (409, Some("urn:doorman:problem:sign-in-links-off")),
        "{api:?}"
    );
    assert!(api.body["detail"].as_str().unwrap().contains("DOORMAN_CONSOLE_URL"));

    // With both configured, both are offered.
    let full = console_at_its_address(&db, &[]).await;
    let session = Session::sign_in(&full.base, &root).await;
    let page = session.get(&format!("/console/tenants/{tenant}")).await.text().await.unwrap();
    assert!(page.contains("/install-links\"") && !page.contains("installs-off"));
    let page = session.get("/console/keys").await.text().await.unwrap();
    assert!(page.contains(&link_form) && !page.contains("sign-in-links-off"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_whose_id_holds_any_printable_character_opens_from_the_lists_and_its_failed_replay_says_so()
{
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Odd Ids", "TODDIDS", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    // A real signed Slack event, accepted and handled (it fails at the agent).
    let odd = "Ev/1<2%3?4#5 6+7&8\"9";
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &serving, "TODDIDS", odd).await, 200);
    until_status(&admin, &root, &tenant, odd, "failed").await;
    // The API's event URL, its id percent-encoded, reads it.
    let read = admin.get(&format!("/admin/v1/tenants/{tenant}/events/{}", segment(odd)), &root).await;
    assert_eq!((read.status.as_u16(), read.body["external_event_id"].as_str()), (200, Some(odd)), "{read:?}");

    // Opened from the failed events in the console.
    let driver = Chromedriver::start().await;
    let browser = driver.browser("odd-ids").await;
    sign_in(&browser, &admin.base, &root).await;
    arrive(&browser, "/console/tenants").await;
    browser.goto(&format!("{}/console/tenants/{tenant}/events?state=failed", admin.base)).await.unwrap();
    browser.find(Locator::LinkText(odd)).await.unwrap().click().await.unwrap();
    let event_page = format!("/console/tenants/{tenant}/events/{}", segment(odd));
    arrive(&browser, &event_page).await;
    assert_eq!(text(&browser, "h1").await, format!("Event {odd}"));
    assert_eq!(text(&browser, "#event-status").await, "failed");

    // Replayed from its page, it fails again: the job says so in the outcome's words.
    click(&browser, "#replay").await;
    until_job_finished(&browser).await;
    assert_eq!(text(&browser, "#job-progress").await, "1 of 1 done: 0 succeeded (1 failed)");
    assert!(text(&browser, "tbody").await.contains("sent again; failed"));
    // The job's link to the event opens it too.
    browser.find(Locator::LinkText(odd)).await.unwrap().click().await.unwrap();
    arrive(&browser, &event_page).await;
    assert_eq!(text(&browser, "#event-status").await, "failed");
    browser.goto(&format!("{}/console/tenants/{tenant}/replays", admin.base)).await.unwrap();
    assert!(text(&browser, "tbody").await.contains("1 of 1 done: 0 succeeded, 1 did not"));
    browser.close().await.unwrap();
    server.shutdown().await;
}

/// axe-core's source (`just axe` installs it).
fn axe_source() -> String {
    let path = std::env::var("AXE_CORE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/axe/node_modules/axe-core/axe.min.js").to_owned()
    });
    std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("axe-core at {path} (run `just axe`, or set AXE_CORE)"))
}

/// The serious and critical violations axe-core finds on the browser's page, one line each.
async fn violations(browser: &Client, axe: &str) -> Vec<String> {
    browser
        .execute(axe, vec![])
        .await
        .expect("axe-core loads (WebDriver scripts are not held to the page's CSP)");
    let found = browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations), e => done(String(e)));",
            vec![],
        )
        .await
        .unwrap();
    let Value::Array(found) = found else { panic!("axe failed: {found}") };
    found
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .map(|v| format!("{} ({}): {}", v["id"], v["impact"], v["nodes"][0]["html"]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_page_has_no_serious_or_critical_accessibility_violation() {
    let db = TestDatabase::create().await;
    // At an address of its own that is its console URL: sign-in links are made whole, and a
    // customer's portal signs in by one.
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let globex = onboarded(&admin, &root, "Globex", "TGLOBEXA11Y", agent.url()).await;
    let tenant = onboarded(&admin, &root, "Acme", "TA11Y", agent.url()).await;
    // Globex's agent disabled by Doorman, as the serving process leaves it: the overview lists it.
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "UPDATE agent_bridges SET paused = true, failing_since = now() - interval '2 hours', \
             failing_seen_at = now(), disabled_at = now() - interval '1 hour' WHERE tenant_id = '{globex}'"
        )),
        &mut db.owner().await,
    )
    .await
    .unwrap();
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    for event in ["EvA11yFailed", "EvA11yStillFailed"] {
        assert_eq!(post_event(&http_client(), &serving, "TA11Y", event).await, 200);
        until_status(&admin, &root, &tenant, event, "failed").await;
    }
    agent.answer_with(200);
    assert_eq!(post_event(&http_client(), &serving, "TA11Y", "EvA11yHandled").await, 200);
    until_status(&admin, &root, &tenant, "EvA11yHandled", "handled").await;
    // The serving process's counts reach the rollup (the tenant's charts, the overview) with
    // its shutdown's flush.
    server.shutdown().await;
    // The Slack app installed in Acme's workspace (as the install flow records it, its token
    // left out: nothing is sent any more), so the tenant's page lists it: its scopes are one
    // word as Slack grants them, wider than a phone.
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "INSERT INTO messaging_installations (tenant_id, platform, team_id, is_enterprise_install, app_id, \
             bot_user_id, scopes) VALUES ('{tenant}', 'slack', 'TA11Y', false, 'A0A11Y', 'UA11YBOT', \
             'app_mentions:read,channels:history,chat:write,commands,groups:history,im:history,users:read')"
        )),
        &mut db.owner().await,
    )
    .await
    .unwrap();
    let replay =
        admin.post(&format!("/admin/v1/tenants/{tenant}/events/EvA11yFailed/replay"), &root, json!({})).await;
    let job = replay.body["id"].as_str().unwrap().to_owned();
    until_status(&admin, &root, &tenant, "EvA11yFailed", "handled").await;
    let portal = key(&db, Some(&tenant), true).await;
    admin.post(&format!("/admin/v1/keys/{}/sign-in-links", key_id(&portal)), &root, json!({})).await;
    let made =
        admin.post("/admin/v1/keys", &root, json!({"name": "payload reader", "read_payloads": true})).await;
    let reads_payloads = made.body["key"].as_str().expect("a key that reads payloads").to_owned();

    let axe = axe_source();
    let shots = std::env::var_os("CONSOLE_SCREENSHOTS").map(std::path::PathBuf::from);
    let driver = Chromedriver::start().await;
    let browser = driver.browser("a11y").await;
    browser.set_window_size(1280, 900).await.unwrap();
    browser.goto(&format!("{}/console/sign-in", admin.base)).await.unwrap();
    let mut found = Vec::new();
    let mut check = async |browser: &Client, name: &str| {
        for problem in violations(browser, &axe).await {
            found.push(format!("{name}: {problem}"));
        }
        if let Some(dir) = &shots {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("{name}.png")), browser.screenshot().await.unwrap()).unwrap();
        }
    };
    check(&browser, "sign-in").await;
    sign_in(&browser, &admin.base, &root).await;
    let pages = [
        ("tenants", "/console/tenants".to_owned()),
        ("overview", "/console/overview".to_owned()),
        ("find-event", "/console/events?event_id=EvA11yFailed".to_owned()),
        ("tenant", format!("/console/tenants/{tenant}")),
        ("events", format!("/console/tenants/{tenant}/events?state=handled")),
        ("event", format!("/console/tenants/{tenant}/events/EvA11yFailed")),
        ("replay-jobs", format!("/console/tenants/{tenant}/replays")),
        ("replay-job", format!("/console/tenants/{tenant}/replays/{job}")),
        ("audit", "/console/audit".to_owned()),
        ("keys", "/console/keys".to_owned()),
        ("keys-picker", "/console/keys?tenant_search=Acme".to_owned()),
        ("tenant-delete", format!("/console/tenants/{tenant}/delete")),
        ("not-found", "/console/tenants/00000000-0000-4000-8000-000000000000".to_owned()),
    ];
    for (name, page) in &pages {
        browser.goto(&format!("{}{page}", admin.base)).await.unwrap();
        check(&browser, name).await;
    }
    // The tenant's activity charts on their own (drawn from the rollup).
    if let Some(dir) = &shots {
        browser.goto(&format!("{}/console/tenants/{tenant}", admin.base)).await.unwrap();
        let charts = find(&browser, "section[aria-labelledby=activity-heading]").await;
        std::fs::write(dir.join("tenant-charts.png"), charts.screenshot().await.unwrap()).unwrap();
    }
    // A bulk retry's preview, as the failed list's form posts it.
    let preview = async |browser: &Client| {
        preview_ticked(browser, &admin.base, &tenant, &["EvA11yStillFailed"]).await;
        assert_eq!(text(browser, "#preview-count").await, "1 of 1 event");
    };
    preview(&browser).await;
    check(&browser, "replay-preview").await;
    // A deletion refused (the name typed is not the tenant's): the page says why.
    browser.goto(&format!("{}/console/tenants/{tenant}/delete", admin.base)).await.unwrap();
    find(&browser, "#confirm-name").await.send_keys("not its name").await.unwrap();
    click(&browser, "#delete").await;
    assert!(text(&browser, ".problem").await.contains("Nothing was deleted"));
    check(&browser, "tenant-delete-refused").await;
    // An event with its request and payload, for a key that reads payloads (scrolled to them):
    // a failed event, whose attempts table has no link in it.
    let reader = driver.browser("a11y-payloads").await;
    reader.set_window_size(1280, 900).await.unwrap();
    sign_in(&reader, &admin.base, &reads_payloads).await;
    arrive(&reader, "/console/tenants").await;
    let still_failed = format!("{}/console/tenants/{tenant}/events/EvA11yStillFailed", admin.base);
    reader.goto(&still_failed).await.unwrap();
    find(&reader, "#payload").await;
    reader.execute("document.getElementById('request-heading').scrollIntoView();", vec![]).await.unwrap();
    check(&reader, "event-payload").await;
    // At phone width too: the attempts table scrolls sideways there.
    browser.set_window_size(390, 844).await.unwrap();
    browser.goto(&format!("{}/console/tenants/{tenant}", admin.base)).await.unwrap();
    check(&browser, "tenant-phone").await;
    browser.goto(&format!("{}/console/overview", admin.base)).await.unwrap();
    assert_eq!(column(&cells(&browser, "#troubled-agents tbody tr").await, 0), ["Globex"]);
    check(&browser, "overview-phone").await;
    preview(&browser).await;
    check(&browser, "replay-preview-phone").await;
    reader.set_window_size(390, 844).await.unwrap();
    reader.goto(&still_failed).await.unwrap();
    let scrolls = "const region = document.getElementById('attempts').parentElement; \
                   return region.scrollWidth > region.clientWidth;";
    assert_eq!(reader.execute(scrolls, vec![]).await.unwrap(), json!(true), "the attempts scroll sideways");
    reader.execute("document.getElementById('attempts-heading').scrollIntoView();", vec![]).await.unwrap();
    check(&reader, "event-phone").await;
    reader.close().await.unwrap();
    // A customer's read-only portal at phone width, signed in by a link as support hands it
    // out: its tenant, its failed events (rows it may tick for a preview) and a failed event,
    // whose attempts scroll sideways there too.
    let customer = driver.browser("a11y-portal").await;
    customer.set_window_size(390, 844).await.unwrap();
    sign_in_by_link(&customer, &admin, &root, &portal, &tenant).await;
    assert!(find(&customer, "header nav").await.text().await.unwrap().contains("My tenant"), "a portal");
    let installs_scroll = "const region = document.querySelector('[aria-labelledby=installations-heading].scroll'); \
                           return region.scrollWidth > region.clientWidth;";
    let scrolled = customer.execute(installs_scroll, vec![]).await.unwrap();
    assert_eq!(scrolled, json!(true), "the installations scroll sideways");
    check(&customer, "portal-tenant-phone").await;
    customer.goto(&format!("{}/console/tenants/{tenant}/events?state=failed", admin.base)).await.unwrap();
    find(&customer, "input[type=checkbox][value=EvA11yStillFailed]").await;
    check(&customer, "portal-events-phone").await;
    customer.goto(&still_failed).await.unwrap();
    assert_eq!(customer.execute(scrolls, vec![]).await.unwrap(), json!(true), "the attempts scroll sideways");
    find(&customer, "#payload-hidden").await;
    check(&customer, "portal-event-phone").await;
    customer.close().await.unwrap();
    assert!(found.is_empty(), "accessibility violations:\n{}", found.join("\n"));
    // The check can fail: a field without a label, added to a page, is found (critical).
    browser
        .execute("document.querySelector('main').appendChild(document.createElement('input'));", vec![])
        .await
        .unwrap();
    let unlabelled = violations(&browser, &axe).await;
    assert!(unlabelled.iter().any(|v| v.starts_with("\"label\"")), "{unlabelled:?}");
    browser.close().await.unwrap();
}

/// Support finds an event by its whole Slack id without knowing its tenant: the tenants page
/// has the box, the answer lists every tenant that has the id, each linking to the event's
/// page, with the id escaped on the page and encoded in the link; a customer's portal finds
/// its own tenant's only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_finds_an_event_by_its_id_in_every_tenant_and_a_portal_in_its_own_only() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let root = key(&db, None, false).await;
    let acme = admin.tenant(&root, "Acme").await;
    let globex = admin.tenant(&root, "Globex <Ltd>").await;
    let odd = "Ev<b>&\"1/?#%";
    for (tenant, id) in [(&acme, "Ev0123ABCD"), (&globex, "Ev0123ABCD"), (&globex, odd)] {
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query(format!(
                "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
                 VALUES ('{tenant}', 'slack', $1, 'app_mention', 0, now())"
            ))
            .bind::<diesel::sql_types::Text, _>(id),
            &mut db.owner().await,
        )
        .await
        .unwrap();
    }
    let event_page = |tenant: &str, id: &str| format!("/console/tenants/{tenant}/events/{}", segment(id));

    let support = Session::sign_in(&admin.base, &key(&db, None, true).await).await;
    let tenants = support.get("/console/tenants").await.text().await.unwrap();
    assert!(
        tenants.contains(r#"action="/console/events""#) && tenants.contains(r#"name="event_id""#),
        "the tenants page has the search box: {tenants}"
    );
    let answer = support.get("/console/events?event_id=Ev0123ABCD").await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()[header::CONTENT_SECURITY_POLICY], CSP);
    let found = answer.text().await.unwrap();
    for link in [event_page(&acme, "Ev0123ABCD"), event_page(&globex, "Ev0123ABCD")] {
        assert!(found.contains(&format!("href=\"{link}\"")), "{link} in {found}");
        assert_eq!(support.get(&link).await.status(), 200, "{link} opens");
    }
    assert!(found.contains("Globex &#60;Ltd&#62;") && !found.contains("Globex <Ltd>"), "{found}");
    let odd_found =
        support.get(&format!("/console/events?event_id={}", segment(odd))).await.text().await.unwrap();
    assert!(odd_found.contains(&format!("href=\"{}\"", event_page(&globex, odd))), "{odd_found}");
    assert!(!odd_found.contains("Ev<b>"), "the id is escaped: {odd_found}");
    assert_eq!(support.get(&event_page(&globex, odd)).await.status(), 200);
    // A pasted id's surrounding spaces are not part of it; a prefix finds nothing.
    let pasted = support.get("/console/events?event_id=%20Ev0123ABCD%0A").await.text().await.unwrap();
    assert!(pasted.contains(&event_page(&acme, "Ev0123ABCD")), "{pasted}");
    let prefix = support.get("/console/events?event_id=Ev0123ABC").await.text().await.unwrap();
    assert!(prefix.contains("No event") && !prefix.contains(&acme), "{prefix}");
    let form_only = support.get("/console/events").await.text().await.unwrap();
    assert!(form_only.contains(r#"name="event_id""#) && !form_only.contains("No event"), "{form_only}");
    assert_eq!(support.get("/console/events?event_id=%C3%A9v").await.status(), 422);

    // A customer's portal (a read-only key for Acme): Acme's event, nothing of Globex.
    let portal = Session::sign_in(&admin.base, &key(&db, Some(&acme), true).await).await;
    let own = portal.get("/console/events?event_id=Ev0123ABCD").await.text().await.unwrap();
    assert!(own.contains(&event_page(&acme, "Ev0123ABCD")), "{own}");
    assert!(!own.contains(&globex) && !own.contains("Globex"), "nothing of another tenant: {own}");
    let theirs =
        portal.get(&format!("/console/events?event_id={}", segment(odd))).await.text().await.unwrap();
    assert!(theirs.contains("No event") && !theirs.contains(&globex), "{theirs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_finds_audit_entries_by_action_key_and_time_with_the_trails_form() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let other = key(&db, None, false).await;
    let a = admin.tenant(&root, "Acme").await;
    let b = admin.tenant(&other, "Globex").await;
    assert_eq!(
        admin
            .put(&format!("/admin/v1/tenants/{a}/retain-payloads"), &other, json!({"enabled": true}))
            .await
            .status,
        200
    );

    let driver = Chromedriver::start().await;
    let browser = driver.browser("audit").await;
    sign_in(&browser, &admin.base, &root).await;
    arrive(&browser, "/console/tenants").await;
    browser.goto(&format!("{}/console/audit", admin.base)).await.unwrap();
    find(&browser, "#action").await.select_by_value("tenant.create").await.unwrap();
    let other_id = key_id(&other).to_string();
    find(&browser, "#key").await.send_keys(&other_id).await.unwrap();
    click(&browser, "form.filters button[type=submit]").await;
    arrive(&browser, &format!("/console/audit?tenant=&action=tenant.create&key={other_id}&since=&until="))
        .await;
    let rows = text(&browser, "tbody").await;
    assert!(rows.contains("tenant.create") && rows.contains(&b), "{rows}");
    assert!(!rows.contains(&a) && !rows.contains("tenant.retain_payloads"), "{rows}");
    assert_eq!(browser.find_all(Locator::Css("tbody tr")).await.unwrap().len(), 1);
    let kept = find(&browser, "#action option[selected]").await.attr("value").await.unwrap();
    assert_eq!(kept.as_deref(), Some("tenant.create"), "the form shows what it found");

    // A window that can hold nothing newer: an hour ago until a minute ago.
    let at =
        |minutes: i64| (chrono::Utc::now() - chrono::Duration::minutes(minutes)).format("%Y-%m-%dT%H:%M");
    browser.goto(&format!("{}/console/audit?since={}&until={}", admin.base, at(60), at(-1))).await.unwrap();
    assert_eq!(
        browser.find_all(Locator::Css("tbody tr")).await.unwrap().len(),
        5,
        "{}",
        text(&browser, "main").await
    );
    browser.goto(&format!("{}/console/audit?since={}&until={}", admin.base, at(120), at(60))).await.unwrap();
    assert!(text(&browser, "main").await.contains("No entries match these filters"));

    // Until before since, an unknown action: the page says why.
    let session = Session::sign_in(&admin.base, &root).await;
    let refused = session.get(&format!("/console/audit?since={}&until={}", at(0), at(60))).await;
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("must not be before since"));
    let refused = session.get("/console/audit?action=tenant.created").await;
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("audit actions"));
    browser.close().await.unwrap();
}

/// The audit entries of `tenant` of `actions`, oldest first, as (action, who, target) with the
/// tenant's name in the target written `NAME`: one tenant's offboarding compared with another's.
async fn entries_of(admin: &Admin, root: &str, tenant: &str, name: &str, actions: &[&str]) -> Vec<Value> {
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}&limit=100"), root).await;
    assert_eq!(trail.status, 200, "{trail:?}");
    let mut entries: Vec<Value> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| actions.iter().any(|a| e["action"] == *a))
        .map(|e| {
            let target = e["target"].as_str().map(|t| t.replace(name, "NAME"));
            json!([e["action"], e["actor_kind"], e["actor_id"], target])
        })
        .collect();
    entries.reverse();
    entries
}

/// Support renames a tenant and deletes it from the console: the deletion is confirmed on a
/// page that says what goes with it, by the tenant's name typed back (a wrong name deletes
/// nothing), runs the API's offboarding and is audited exactly as the API's is. A read-only
/// support key and a customer's portal key, even one that may write, see neither form and are
/// refused both (403), token and all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_renames_and_deletes_a_tenant_confirmed_by_its_name_and_audited_as_the_apis() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let acme = onboarded(&admin, &root, "Acme", "TOFFBOARDC", agent.url()).await;
    let globex = onboarded(&admin, &root, "Globex", "TOFFBOARDA", agent.url()).await;
    let portal_key = key(&db, Some(&acme), false).await;
    let page = format!("/console/tenants/{acme}");
    let (rename, delete) = (format!("{page}/rename"), format!("{page}/delete"));
    let origin = Some(admin.base.as_str());
    let name_now = async || admin.get(&format!("/admin/v1/tenants/{acme}"), &root).await.body["name"].clone();

    let support = Session::sign_in(&admin.base, &root).await;
    let shown = support.get(&page).await.text().await.unwrap();
    assert!(shown.contains(&format!("action=\"{rename}\"")), "the rename form: {shown}");
    assert!(shown.contains(&format!("href=\"{delete}\"")), "the way to delete: {shown}");

    // Renamed: the API reads the new name, and the trail has it under this key.
    let csrf = support.csrf(&page).await;
    let renamed = support.post(&rename, origin, &[("csrf", &csrf), ("name", "Acme Ltd")]).await;
    assert_eq!(
        (renamed.status().as_u16(), renamed.headers()[header::LOCATION].to_str().unwrap()),
        (303, &*format!("{page}?done=renamed"))
    );
    assert_eq!(name_now().await, "Acme Ltd");
    assert!(
        support.get(&format!("{page}?done=renamed")).await.text().await.unwrap().contains("Tenant renamed.")
    );
    let blank = support.post(&rename, origin, &[("csrf", &csrf), ("name", " ")]).await;
    assert_eq!(blank.status(), 400, "a name is required");

    // The confirmation says what goes with the tenant before anything does.
    let confirm = support.get(&delete).await;
    assert_eq!(confirm.status(), 200);
    let confirm = confirm.text().await.unwrap();
    for said in
        ["Delete Acme Ltd?", "TOFFBOARDC", agent.url(), "test key", "0 events", "name=\"confirm_name\""]
    {
        assert!(confirm.contains(said), "{said} in {confirm}");
    }
    assert!(!confirm.contains("TOFFBOARDA"), "nothing of another tenant: {confirm}");

    // A read-only support key and the customer's own key (that may write): no form, and 403
    // for each form posted with their session's token; the tenant is untouched.
    let reader = Session::sign_in(&admin.base, &key(&db, None, true).await).await;
    let portal = Session::sign_in(&admin.base, &portal_key).await;
    for (who, session) in [("read-only", &reader), ("portal", &portal)] {
        let shown = session.get(&page).await.text().await.unwrap();
        assert!(!shown.contains(&rename) && !shown.contains(&delete), "{who} sees no form: {shown}");
        assert_eq!(session.get(&delete).await.status(), 403, "{who}: the confirmation");
        let csrf = session.csrf(&page).await;
        let posted = session.post(&rename, origin, &[("csrf", &csrf), ("name", "Taken")]).await;
        assert_eq!(posted.status(), 403, "{who}: rename");
        let posted = session.post(&delete, origin, &[("csrf", &csrf), ("confirm_name", "Acme Ltd")]).await;
        assert_eq!(posted.status(), 403, "{who}: delete");
    }
    // Another tenant's, for the portal: as if it did not exist.
    assert_eq!(portal.get(&format!("/console/tenants/{globex}/delete")).await.status(), 404);
    // Without the token, or with a name that is not the tenant's: nothing deleted.
    assert_eq!(support.post(&delete, origin, &[("confirm_name", "Acme Ltd")]).await.status(), 403);
    let wrong = support.post(&delete, origin, &[("csrf", &csrf), ("confirm_name", "Acme")]).await;
    assert_eq!(wrong.status(), 422);
    assert!(wrong.text().await.unwrap().contains("Nothing was deleted"));
    assert_eq!(name_now().await, "Acme Ltd", "renamed by support only, and still there");

    // Deleted, typed back: to the tenants, saying so; gone from the API; its key's session ended.
    let deleted = support.post(&delete, origin, &[("csrf", &csrf), ("confirm_name", "Acme Ltd")]).await;
    assert_eq!(
        (deleted.status().as_u16(), deleted.headers()[header::LOCATION].to_str().unwrap()),
        (303, "/console/tenants?done=deleted")
    );
    let listing = support.get("/console/tenants?done=deleted").await.text().await.unwrap();
    assert!(listing.contains("Tenant deleted") && !listing.contains("Acme Ltd"), "{listing}");
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{acme}"), &root).await.status, 404);
    assert_eq!(portal.get(&page).await.status(), 303, "the portal's key went with its tenant");

    // Audited as the API's offboarding is: the same entries, by the same key, the same targets.
    let api =
        admin.call(reqwest::Method::DELETE, &format!("/admin/v1/tenants/{globex}"), Some(&root), None).await;
    assert_eq!(api.status, 200, "{api:?}");
    let actions = ["tenant.delete", "tenant.purge"];
    let by_console = entries_of(&admin, &root, &acme, "Acme Ltd", &actions).await;
    let by_api = entries_of(&admin, &root, &globex, "Globex", &actions).await;
    assert_eq!(by_console, by_api);
    assert_eq!(by_console[0], json!(["tenant.delete", "key", key_id(&root).to_string(), "NAME"]));
    assert!(by_console.len() >= 2, "the purge is on record: {by_console:?}");
    let renames = entries_of(&admin, &root, &acme, "Acme", &["tenant.rename"]).await;
    assert_eq!(renames, [json!(["tenant.rename", "key", key_id(&root).to_string(), "NAME -> NAME Ltd"])]);
}

/// A new key's tenant is picked by name from the server's matches, never pasted: the picker
/// offers at most `PICKER_SIZE` tenants and says there are more, a search narrows them (the
/// only match chosen), and the key made is the chosen tenant's. No script is involved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_keys_tenant_is_picked_from_a_search_by_name_and_the_key_is_that_tenants() {
    use doorman_app::operator::console::PICKER_SIZE;
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    for n in 0..PICKER_SIZE {
        admin.tenant(&root, &format!("Filler {n:02}")).await;
    }
    let alpha = admin.tenant(&root, "Picker Alpha").await;
    let beta = admin.tenant(&root, "Picker Beta").await;
    let session = Session::sign_in(&admin.base, &root).await;
    let options = |page: &str| page.matches("<option value=\"").count() - 1;

    // Unsearched: the first PICKER_SIZE, and how many there are.
    let all = session.get("/console/keys").await.text().await.unwrap();
    assert_eq!(options(&all), PICKER_SIZE as usize, "{all}");
    assert!(
        all.contains(&format!("{} tenants: the first {PICKER_SIZE} are offered", PICKER_SIZE + 2)),
        "{all}"
    );
    assert!(!all.contains(&beta), "past the picker's size: {all}");
    assert!(all.contains("<option value=\"\">Every tenant"), "{all}");

    // Searched by part of the name: Beta alone, chosen.
    let found = session.get("/console/keys?tenant_search=beta").await.text().await.unwrap();
    assert_eq!(options(&found), 1, "{found}");
    assert!(
        found.contains(&format!("<option value=\"{beta}\" selected>Picker Beta ({beta})</option>")),
        "{found}"
    );
    assert!(found.contains("1 tenant found for “beta”.") && !found.contains(&alpha), "{found}");
    let two = session.get("/console/keys?tenant_search=Picker").await.text().await.unwrap();
    assert_eq!(options(&two), 2, "{two}");
    assert!(!two.contains(" selected>"), "two matches: none chosen for the user: {two}");
    let none = session.get("/console/keys?tenant_search=Initech").await.text().await.unwrap();
    assert!(none.contains("0 tenants found for “Initech”.") && options(&none) == 0, "{none}");

    // The form as the picker fills it: a key for Beta, read-only, shown once.
    let csrf = session.csrf("/console/keys").await;
    let made = session
        .post(
            "/console/keys",
            Some(&admin.base),
            &[("csrf", &csrf), ("name", "beta portal"), ("tenant", &beta), ("read_only", "on")],
        )
        .await;
    assert_eq!(made.status(), 200);
    assert!(made.text().await.unwrap().contains("id=\"new-key\""));
    let keys = admin.get("/admin/v1/keys", &root).await.body;
    let listed = keys["items"].as_array().unwrap_or_else(|| keys.as_array().unwrap());
    let made = listed.iter().find(|k| k["name"] == "beta portal").expect("the key made");
    assert_eq!((&made["tenant_id"], &made["read_only"]), (&json!(beta), &json!(true)), "{made}");
}

/// Every time a page shows is a `<time>` whose `datetime` is UTC to the second (to the
/// millisecond on an event's page) and whose text and title say it in UTC: what a browser
/// without the script shows. No time is written any other way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_time_is_a_time_element_in_utc_with_its_utc_title() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at, handled_at) \
             VALUES ('{tenant}', 'slack', 'EvTimes', 'app_mention', 0, now() - interval '1.234 seconds', now())"
        )),
        &mut db.owner().await,
    )
    .await
    .unwrap();
    let at = |value: &Value| chrono::DateTime::parse_from_rfc3339(value.as_str().unwrap()).unwrap().to_utc();
    let element = |at: chrono::DateTime<chrono::Utc>, ms: bool| {
        let (machine, words) = if ms {
            (at.format("%Y-%m-%dT%H:%M:%S%.3fZ"), at.format("%Y-%m-%d %H:%M:%S%.3f UTC"))
        } else {
            (at.format("%Y-%m-%dT%H:%M:%SZ"), at.format("%Y-%m-%d %H:%M:%S UTC"))
        };
        format!(r#"<time datetime="{machine}" title="{words}">{words}</time>"#)
    };
    let created = at(&admin.get(&format!("/admin/v1/tenants/{tenant}"), &root).await.body["created_at"]);
    let event = admin.get(&format!("/admin/v1/tenants/{tenant}/events/EvTimes"), &root).await.body;
    let session = Session::sign_in(&admin.base, &root).await;

    let listing = session.get("/console/tenants").await.text().await.unwrap();
    assert!(listing.contains(&element(created, false)), "{listing}");
    let shown = session.get(&format!("/console/tenants/{tenant}/events/EvTimes")).await.text().await.unwrap();
    for ms in [at(&event["claimed_at"]), at(&event["handled_at"])] {
        assert!(shown.contains(&element(ms, true)), "{} in {shown}", element(ms, true));
    }
    assert!(!shown.contains(&element(at(&event["claimed_at"]), false)), "to the millisecond");

    // On every page with times, each " UTC" is a time's title or its text: none is written
    // another way.
    for page in [
        "/console/tenants".to_owned(),
        format!("/console/tenants/{tenant}"),
        format!("/console/tenants/{tenant}/events?state=all"),
        format!("/console/tenants/{tenant}/events/EvTimes"),
        "/console/events?event_id=EvTimes".to_owned(),
        "/console/audit".to_owned(),
        "/console/keys".to_owned(),
        format!("/console/tenants/{tenant}/delete"),
    ] {
        let shown = session.get(&page).await.text().await.unwrap();
        let times = shown.matches("<time datetime=\"").count();
        assert!(times > 0, "{page} shows a time: {shown}");
        assert_eq!(shown.matches(" UTC").count(), 2 * times, "{page}: {shown}");
        assert_eq!(shown.matches(" UTC\">").count(), times, "{page}: every time's title: {shown}");
    }
}

/// In Chromium in another zone (Asia/Kolkata, UTC+5:30), the console's script says each time
/// in the browser's zone, to the second or the millisecond as the server gave it, and keeps
/// the UTC in the title; support then renames and deletes a tenant through the pages' forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_times_are_in_its_zone_with_utc_on_hover_and_a_tenant_is_renamed_and_deleted() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let tenant = admin.tenant(&root, "Acme").await;
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{tenant}', 'slack', 'EvZone', 'app_mention', 0, now() - interval '0.5 seconds')"
        )),
        &mut db.owner().await,
    )
    .await
    .unwrap();
    let kolkata = chrono::FixedOffset::east_opt(5 * 3600 + 30 * 60).unwrap();

    let driver = Chromedriver::start_with(&[("TZ", "Asia/Kolkata")]).await;
    let browser = driver.browser("zone").await;
    sign_in(&browser, &admin.base, &root).await;
    arrive(&browser, "/console/tenants").await;
    for (page, format) in [
        (format!("/console/tenants/{tenant}"), "%Y-%m-%d %H:%M:%S"),
        (format!("/console/tenants/{tenant}/events/EvZone"), "%Y-%m-%d %H:%M:%S%.3f"),
    ] {
        browser.goto(&format!("{}{page}", admin.base)).await.unwrap();
        let time = find(&browser, "main time").await;
        let utc = time.attr("datetime").await.unwrap().expect("its datetime");
        let at = chrono::DateTime::parse_from_rfc3339(&utc).unwrap().to_utc();
        let title = time.attr("title").await.unwrap().expect("its title");
        let utc_format = format!("{format} UTC");
        assert_eq!(title, at.format(&utc_format).to_string(), "{page}: the title keeps the UTC");
        let local = at.with_timezone(&kolkata).format(format).to_string();
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut shown = time.text().await.unwrap();
        while !shown.starts_with(&local) {
            assert!(tokio::time::Instant::now() < deadline, "{page}: {shown:?}, not {local} (Kolkata)");
            tokio::time::sleep(Duration::from_millis(50)).await;
            shown = time.text().await.unwrap();
        }
        assert!(!shown.ends_with("UTC") && shown.len() > local.len(), "{page}: the zone named: {shown:?}");
    }

    // Renamed, then deleted after its name is typed back, through the pages' own forms.
    browser.goto(&format!("{}/console/tenants/{tenant}", admin.base)).await.unwrap();
    let field = find(&browser, "#rename-name").await;
    field.clear().await.unwrap();
    field.send_keys("Acme Ltd").await.unwrap();
    click(&browser, "#rename").await;
    arrive(&browser, &format!("/console/tenants/{tenant}?done=renamed")).await;
    assert_eq!(text(&browser, "h1").await, "Acme Ltd");
    click(&browser, "#delete-tenant").await;
    arrive(&browser, &format!("/console/tenants/{tenant}/delete")).await;
    assert!(text(&browser, "#deleted-with-it").await.contains("1 event"));
    find(&browser, "#confirm-name").await.send_keys("Acme Ltd").await.unwrap();
    click(&browser, "#delete").await;
    arrive(&browser, "/console/tenants?done=deleted").await;
    assert!(text(&browser, ".notice").await.starts_with("Tenant deleted"));
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{tenant}"), &root).await.status, 404);
    browser.close().await.unwrap();
}

/// Support retries failures in bulk: the rows it ticks, or every event the list's filter
/// shows, each previewed first (how many, which; nothing sent), then run as a replay job and
/// audited with what was asked. A read-only session may preview, not start one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_retries_the_failures_it_ticks_or_its_filter_shows_after_a_preview() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Bulk", "TBULK", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    for event in ["EvBulk1", "EvBulk2", "EvBulk3"] {
        assert_eq!(post_event(&http_client(), &serving, "TBULK", event).await, 200);
        until_status(&admin, &root, &tenant, event, "failed").await;
    }
    agent.answer_with(200);

    let driver = Chromedriver::start().await;
    let browser = driver.browser("bulk").await;
    sign_in(&browser, &admin.base, &root).await;
    arrive(&browser, "/console/tenants").await;
    let failed = format!("/console/tenants/{tenant}/events?state=failed");
    browser.goto(&format!("{}{failed}", admin.base)).await.unwrap();
    arrive(&browser, &failed).await;

    // Two rows ticked, previewed: those two (in the list's order, newest failure first), and
    // nothing sent.
    for event in ["EvBulk1", "EvBulk3"] {
        click(&browser, &format!("input[type=checkbox][value={event}]")).await;
    }
    click(&browser, "#retry-chosen button").await;
    arrive(&browser, &format!("/console/tenants/{tenant}/replays/preview")).await;
    assert_eq!(text(&browser, "#preview-count").await, "2 of 2 events");
    assert_eq!(text(&browser, "#preview-selection").await, "2 chosen events: EvBulk3, EvBulk1");
    let rows = text(&browser, "tbody").await;
    assert!(rows.contains("EvBulk1") && rows.contains("EvBulk3") && !rows.contains("EvBulk2"), "{rows}");
    assert!(rows.contains("would replay"), "{rows}");
    let problems = violations(&browser, &axe_source()).await;
    assert!(problems.is_empty(), "the preview's accessibility: {problems:?}");
    assert_eq!(agent.count_for("EvBulk1") + agent.count_for("EvBulk3"), 0, "a preview sends nothing");

    // Confirmed: a job of those two.
    click(&browser, "#confirm-retry button").await;
    until_job_finished(&browser).await;
    assert_eq!(text(&browser, "#job-progress").await, "2 of 2 done: 2 succeeded (2 handled)");
    assert_eq!(
        (agent.count_for("EvBulk1"), agent.count_for("EvBulk2"), agent.count_for("EvBulk3")),
        (1, 0, 1)
    );

    // The rest by the list's filter: what the failed list shows now is EvBulk2 alone.
    browser.goto(&format!("{}{failed}", admin.base)).await.unwrap();
    assert_eq!(text_of_rows(&browser).await.len(), 1);
    click(&browser, "#retry-matching button").await;
    arrive(&browser, &format!("/console/tenants/{tenant}/replays/preview")).await;
    assert_eq!(text(&browser, "#preview-count").await, "1 of 1 event");
    assert_eq!(text(&browser, "#preview-selection").await, "failed events (the first 1000)");
    click(&browser, "#confirm-retry button").await;
    until_job_finished(&browser).await;
    assert_eq!(text(&browser, "#job-progress").await, "1 of 1 done: 1 succeeded (1 handled)");
    assert_eq!(agent.count_for("EvBulk2"), 1);

    // Both jobs in the trail, with what was asked.
    browser.goto(&format!("{}/console/audit?tenant={tenant}", admin.base)).await.unwrap();
    let trail = text(&browser, "tbody").await;
    for asked in ["2 chosen events: EvBulk3, EvBulk1", "failed events (the first 1000)"] {
        assert!(trail.contains(asked), "{asked} in {trail}");
    }
    browser.close().await.unwrap();

    // A read-only session previews (what it would do now: each refused, handled already) and
    // cannot start a job; a bad selection is a 400 that says why.
    let reader = key(&db, Some(&tenant), true).await;
    let session = Session::sign_in(&admin.base, &reader).await;
    let csrf = session.csrf(&failed.replace("state=failed", "state=all")).await;
    let preview = format!("/console/tenants/{tenant}/replays/preview");
    let chosen = [("csrf", csrf.as_str()), ("event_id", "EvBulk1"), ("event_id", "EvBulk2")];
    let answer = session.post(&preview, Some(&admin.base), &chosen).await;
    assert_eq!(answer.status(), 200);
    let page = answer.text().await.unwrap();
    assert!(page.contains("0 of 2 events") && page.contains("already handled"), "{page}");
    assert!(page.contains("read-only") && !page.contains("id=\"confirm-retry\""), "{page}");
    let start = format!("/console/tenants/{tenant}/replays");
    assert_eq!(session.post(&start, Some(&admin.base), &chosen).await.status(), 403);
    for bad in [
        vec![("csrf", csrf.as_str())],
        vec![("csrf", csrf.as_str()), ("state", "handled")],
        vec![("csrf", csrf.as_str()), ("state", "failed"), ("limit", "0")],
    ] {
        let answer = session.post(&preview, Some(&admin.base), &bad).await;
        assert_eq!(answer.status(), 400, "{bad:?}");
    }
    server.shutdown().await;
}

/// An event's page shows the request Doorman sent its agent (the agent as it is now, each
/// header, the signature redacted) to every session that sees the event, and its kept payload
/// only to a session whose key may read payloads; the keys page makes such a key with its
/// checkbox and says which keys read payloads; and the page with the payload shown passes axe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_page_shows_its_request_to_every_session_and_its_payload_only_to_one_allowed() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Payloads", "TPAGE", agent.url()).await;
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "support", "read_payloads": true})).await;
    let reader = made.body["key"].as_str().expect("a key that reads payloads").to_owned();
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &serving, "TPAGE", "EvPage").await, 200);
    until_status(&admin, &root, &tenant, "EvPage", "failed").await;
    let page_path = format!("/console/tenants/{tenant}/events/EvPage");
    let signatures: Vec<String> =
        agent.arrivals().iter().map(|a| a.webhook_signature.trim_start_matches("v1,").to_owned()).collect();
    assert!(!signatures.is_empty(), "the agent was sent the event");

    let allowed = Session::sign_in(&admin.base, &reader).await.get(&page_path).await.text().await.unwrap();
    let refused = Session::sign_in(&admin.base, &root).await.get(&page_path).await.text().await.unwrap();
    for page in [&allowed, &refused] {
        // The request, for both: the agent's URL now, every header, the signature withheld.
        assert!(page.contains(&format!("<code id=\"request-line\">POST {}</code>", agent.url())), "{page}");
        for header in
            ["host", "user-agent", "content-type", "content-length", "webhook-id", "webhook-timestamp"]
        {
            assert!(page.contains(&format!("<td><code>{header}</code></td>")), "{header} in {page}");
        }
        assert!(page.contains("<code>evt_EvPage</code>"), "{page}");
        assert!(page.contains("<code class=\"redacted\">v1,… (redacted)</code>"), "{page}");
        assert!(page.contains("as it is set now"), "the page says whose URL it is: {page}");
        for secret in signatures.iter().map(String::as_str).chain([AGENT_SECRET, "XXYYZZ"]) {
            assert!(!page.contains(secret), "{secret} on the page");
        }
    }
    // The payload: shown to the allowed session (escaped as HTML), hidden from the other, saying why.
    assert!(allowed.contains("<pre id=\"payload\""), "{allowed}");
    assert!(allowed.contains("&#60;@U0LAN0Z89&#62; hello"), "the message, escaped: {allowed}");
    assert!(allowed.contains("\n  &#34;event_id&#34;: &#34;EvPage&#34;,\n"), "indented: {allowed}");
    assert!(!allowed.contains("id=\"payload-hidden\""), "{allowed}");
    assert!(!refused.contains("<pre id=\"payload\"") && !refused.contains("hello"), "{refused}");
    assert!(refused.contains("id=\"payload-hidden\">Not shown: this key may not read payloads"), "{refused}");

    // The keys page: its checkbox, and which keys read payloads. A key made with it ticked reads them.
    let support = Session::sign_in(&admin.base, &root).await;
    let keys = support.get("/console/keys").await.text().await.unwrap();
    assert!(keys.contains("name=\"read_payloads\""), "{keys}");
    assert_eq!(keys.matches("reads payloads</span>").count(), 1, "the support key alone: {keys}");
    let csrf = support.csrf("/console/keys").await;
    let form = [("csrf", csrf.as_str()), ("name", "ticked"), ("tenant", ""), ("read_payloads", "on")];
    let created = support.post("/console/keys", Some(&admin.base), &form).await;
    assert_eq!(created.status(), 200);
    let listed = admin.get("/admin/v1/keys", &root).await.body;
    let ticked = listed["items"].as_array().unwrap().iter().find(|k| k["name"] == "ticked").cloned();
    assert_eq!(ticked.map(|k| k["read_payloads"].clone()), Some(json!(true)), "{listed}");
    // A read-only portal made with it ticked is made (its tenant decides when it reads them).
    let portal = [
        ("csrf", csrf.as_str()),
        ("name", "portal"),
        ("tenant", tenant.as_str()),
        ("read_only", "on"),
        ("read_payloads", "on"),
    ];
    let answer = support.post("/console/keys", Some(&admin.base), &portal).await;
    assert_eq!(answer.status(), 200);
    let listed = admin.get("/admin/v1/keys", &root).await.body;
    let made = listed["items"].as_array().unwrap().iter().find(|k| k["name"] == "portal").cloned();
    let scope = made.map(|k| (k["tenant_id"].clone(), k["read_only"].clone(), k["read_payloads"].clone()));
    assert_eq!(scope, Some((json!(tenant), json!(true), json!(true))), "{listed}");

    // In Chromium: the page with its request and payload has no serious or critical violation.
    let driver = Chromedriver::start().await;
    let browser = driver.browser("payload").await;
    sign_in(&browser, &admin.base, &reader).await;
    arrive(&browser, "/console/tenants").await;
    browser.goto(&format!("{}{page_path}", admin.base)).await.unwrap();
    assert!(text(&browser, "#payload").await.contains("hello"));
    let problems = violations(&browser, &axe_source()).await;
    assert!(problems.is_empty(), "the event page's accessibility: {problems:?}");
    browser.close().await.unwrap();
    server.shutdown().await;
}

/// Support sees trouble coming: the serving process counts each dispatch as it ends (flushed
/// at shutdown at the latest), the API and the tenant's page show its hours (charts drawn on
/// the server, no script), and the overview names the tenants failing most; a customer's
/// portal sees its own tenant's charts and not the overview.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenants_dispatches_are_charted_by_hour_and_the_overview_names_the_tenants_failing_most() {
    let db = TestDatabase::create().await;
    let admin = Admin::start_allowing_private(&db).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Charted", "TCHART", agent.url()).await;
    let calm = onboarded(&admin, &root, "Calm", "TCALM", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    for event in ["EvChart1", "EvChart2"] {
        assert_eq!(post_event(&http_client(), &serving, "TCHART", event).await, 200);
        until_status(&admin, &root, &tenant, event, "failed").await;
    }
    agent.answer_with(200);
    for event in ["EvChart3", "EvChart4", "EvChart5"] {
        assert_eq!(post_event(&http_client(), &serving, "TCHART", event).await, 200);
        until_status(&admin, &root, &tenant, event, "handled").await;
    }
    assert_eq!(post_event(&http_client(), &serving, "TCALM", "EvCalm").await, 200);
    until_status(&admin, &root, &calm, "EvCalm", "handled").await;
    // The last counts reach the rollup with the shutdown's flush.
    server.shutdown().await;

    let activity = admin.get(&format!("/admin/v1/tenants/{tenant}/activity"), &root).await;
    assert_eq!(activity.status, 200, "{activity:?}");
    let hours = activity.body["hours"].as_array().unwrap();
    assert_eq!(hours.len(), 24, "every hour of the day");
    assert_eq!(
        (hours[23]["delivered"].as_u64(), hours[23]["failed"].as_u64()),
        (Some(3), Some(2)),
        "{activity:?}"
    );
    assert!(hours[23]["mean_ms"].as_u64().is_some() && hours[0]["mean_ms"].is_null(), "{activity:?}");
    assert_eq!(
        (activity.body["total"]["delivered"].as_u64(), activity.body["total"]["failed"].as_u64()),
        (Some(3), Some(2))
    );
    let week = admin.get(&format!("/admin/v1/tenants/{tenant}/activity?hours=168"), &root).await;
    assert_eq!(week.body["hours"].as_array().unwrap().len(), 168);
    for refused in ["0", "169", "day"] {
        let answer = admin.get(&format!("/admin/v1/tenants/{tenant}/activity?hours={refused}"), &root).await;
        assert_eq!(
            (answer.status.as_u16(), answer.body["field"].as_str()),
            (422, Some("hours")),
            "{refused}"
        );
    }
    let overview = admin.get("/admin/v1/overview", &root).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    let failing = overview.body["failing_most"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "Calm has no failure: {overview:?}");
    assert_eq!((failing[0]["name"].as_str(), failing[0]["failed"].as_u64()), (Some("Charted"), Some(2)));

    // A customer's portal: its own tenant's activity, not another's, not the overview.
    let portal = key(&db, Some(&tenant), true).await;
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{tenant}/activity"), &portal).await.status, 200);
    assert_eq!(admin.get(&format!("/admin/v1/tenants/{calm}/activity"), &portal).await.status, 404);
    assert_eq!(admin.get("/admin/v1/overview", &portal).await.status, 403);

    // The console: the tenant's page charts its day (no script), the overview links to it.
    let session = Session::sign_in(&admin.base, &root).await;
    let page = session.get(&format!("/console/tenants/{tenant}")).await.text().await.unwrap();
    assert!(page.contains("2 failed dispatches</a> in the last 24 hours"), "{page}");
    assert!(
        page.contains(
            r#"aria-label="Dispatches, last 24 hours: 5 dispatches over 24 hours: 3 taken, 2 failed""#
        ),
        "{page}"
    );
    assert_eq!(
        page.matches("<rect class=\"bar-failed\"").count(),
        2,
        "the hour's failures, in the day's and the week's charts"
    );
    let listed = session.get("/console/overview").await.text().await.unwrap();
    assert!(listed.contains(&format!(r#"<a href="/console/tenants/{tenant}">Charted</a>"#)), "{listed}");
    assert!(!listed.contains("Calm"), "{listed}");
    let customer = Session::sign_in(&admin.base, &portal).await;
    assert_eq!(customer.get("/console/overview").await.status(), 403);
    let own = customer.get(&format!("/console/tenants/{tenant}")).await.text().await.unwrap();
    assert!(own.contains("3 taken, 2 failed") && !own.contains("/console/overview"), "{own}");
}

/// The text of each cell of each row `css` finds (`#attempts tbody tr`), once there is one.
async fn cells(browser: &Client, css: &str) -> Vec<Vec<String>> {
    find(browser, css).await;
    let mut rows = Vec::new();
    for row in browser.find_all(Locator::Css(css)).await.unwrap() {
        let mut cells = Vec::new();
        for cell in row.find_all(Locator::Css("td")).await.unwrap() {
            cells.push(cell.text().await.unwrap());
        }
        rows.push(cells);
    }
    rows
}

/// The column `at` of `rows`.
fn column(rows: &[Vec<String>], at: usize) -> Vec<&str> {
    rows.iter().map(|row| row[at].as_str()).collect()
}

/// A customer signs `browser` in as support hands them their portal: a sign-in link made for
/// `portal` (a key scoped to `tenant`), opened and its button pressed, landing on the tenant.
async fn sign_in_by_link(browser: &Client, admin: &Admin, root: &str, portal: &str, tenant: &str) {
    let made = admin.post(&format!("/admin/v1/keys/{}/sign-in-links", key_id(portal)), root, json!({})).await;
    assert_eq!(made.status, 201, "{made:?}");
    browser.goto(made.body["url"].as_str().unwrap()).await.unwrap();
    click(browser, "form button[type=submit]").await;
    arrive(browser, &format!("/console/tenants/{tenant}")).await;
}

/// The browser's console session as a plain HTTP client (its cookie), to post what its pages
/// do not offer.
async fn session_of(browser: &Client, base: &str) -> Session {
    let cookie = browser.get_named_cookie("doorman_console").await.unwrap();
    Session {
        base: base.to_owned(),
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
        cookie: format!("doorman_console={}", cookie.value()),
    }
}

/// Ticks the failed list's rows of `events` and previews a retry of them.
async fn preview_ticked(browser: &Client, base: &str, tenant: &str, events: &[&str]) {
    let failed = format!("/console/tenants/{tenant}/events?state=failed");
    browser.goto(&format!("{base}{failed}")).await.unwrap();
    arrive(browser, &failed).await;
    for event in events {
        click(browser, &format!("input[type=checkbox][value={event}]")).await;
    }
    click(browser, "#retry-chosen button").await;
    arrive(browser, &format!("/console/tenants/{tenant}/replays/preview")).await;
}

/// A bulk retry as people click it, in Chromium: support ticks two failed events, previews
/// them (exactly those, each "would replay", nothing sent), confirms, lands on the job and
/// sees both handled; then every event the failed list's filter shows, at most one; a
/// customer's read-only portal previews the last and has no confirmation (a post of one is
/// 403); a customer's portal that may write retries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_retry_is_previewed_and_confirmed_by_support_and_a_writing_portal_and_only_previewed_read_only()
 {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Retry Co", "TRETRYB", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    let all = ["EvRetry1", "EvRetry2", "EvRetry3", "EvRetry4"];
    for event in all {
        assert_eq!(post_event(&http_client(), &serving, "TRETRYB", event).await, 200);
        until_status(&admin, &root, &tenant, event, "failed").await;
    }
    agent.answer_with(200);
    let sent = |events: &[&str]| events.iter().map(|e| agent.count_for(e)).sum::<usize>();
    let preview = format!("/console/tenants/{tenant}/replays/preview");
    let driver = Chromedriver::start().await;

    // Support ticks two rows and previews: exactly those two, each would be replayed, nothing sent.
    let support = driver.browser("bulk-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;
    preview_ticked(&support, &admin.base, &tenant, &["EvRetry1", "EvRetry3"]).await;
    let rows = cells(&support, "tbody tr").await;
    let mut listed = column(&rows, 0);
    listed.sort_unstable();
    assert_eq!(listed, ["EvRetry1", "EvRetry3"], "{rows:?}");
    assert_eq!(column(&rows, 1), ["would replay", "would replay"], "{rows:?}");
    assert_eq!(text(&support, "#preview-count").await, "2 of 2 events");
    assert_eq!(sent(&all), 0, "a preview sends nothing");

    // Confirmed: the replay job's page, and both events handled, read from the job's links.
    assert_eq!(text(&support, "#confirm-retry button").await, "Retry 2 events");
    click(&support, "#confirm-retry button").await;
    until_job_finished(&support).await;
    assert!(path(&support).await.starts_with(&format!("/console/tenants/{tenant}/replays/")));
    assert_eq!(text(&support, "#job-progress").await, "2 of 2 done: 2 succeeded (2 handled)");
    for event in ["EvRetry1", "EvRetry3"] {
        let job = support.current_url().await.unwrap();
        support.find(Locator::LinkText(event)).await.unwrap().click().await.unwrap();
        arrive(&support, &format!("/console/tenants/{tenant}/events/{event}")).await;
        assert_eq!(text(&support, "#event-status").await, "handled", "{event}");
        support.goto(job.as_str()).await.unwrap();
    }
    assert_eq!((sent(&["EvRetry1", "EvRetry3"]), sent(&["EvRetry2", "EvRetry4"])), (2, 0));

    // Every event the filter shows, at most 1: a preview of one of the two left, saying the
    // limit is reached; confirmed, that one is handled and the other is still failed.
    let failed = format!("/console/tenants/{tenant}/events?state=failed");
    support.goto(&format!("{}{failed}", admin.base)).await.unwrap();
    // (The first column is each row's checkbox.)
    let left: Vec<String> =
        column(&cells(&support, "tbody tr").await, 1).into_iter().map(str::to_owned).collect();
    let mut sorted = left.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["EvRetry2", "EvRetry4"], "{left:?}");
    let limit = find(&support, "#retry-limit").await;
    limit.clear().await.unwrap();
    limit.send_keys("1").await.unwrap();
    click(&support, "#retry-matching button").await;
    arrive(&support, &preview).await;
    assert_eq!(text(&support, "#preview-count").await, "1 of 1 event");
    assert_eq!(text(&support, "#preview-selection").await, "failed events (the first 1)");
    assert!(text(&support, "#preview-limit").await.contains("The limit is reached"));
    let chosen = column(&cells(&support, "tbody tr").await, 0)[0].to_owned();
    assert!(left.contains(&chosen), "{chosen} of {left:?}");
    assert_eq!(sent(&all), 2, "a preview sends nothing");
    click(&support, "#confirm-retry button").await;
    until_job_finished(&support).await;
    assert_eq!(text(&support, "#job-progress").await, "1 of 1 done: 1 succeeded (1 handled)");
    until_status(&admin, &root, &tenant, &chosen, "handled").await;
    let last = left.iter().find(|e| **e != chosen).unwrap().clone();
    assert_eq!((agent.count_for(&chosen), agent.count_for(&last)), (1, 0));
    support.close().await.unwrap();

    // A customer's read-only portal previews the last one and is offered no confirmation;
    // posting one anyway, with its session and token, is refused and sends nothing.
    let reader = driver.browser("bulk-reader").await;
    sign_in_by_link(&reader, &admin, &root, &key(&db, Some(&tenant), true).await, &tenant).await;
    preview_ticked(&reader, &admin.base, &tenant, &[&last]).await;
    let rows = cells(&reader, "tbody tr").await;
    assert_eq!((column(&rows, 0), column(&rows, 1)), (vec![last.as_str()], vec!["would replay"]));
    assert!(reader.find_all(Locator::Css("#confirm-retry")).await.unwrap().is_empty(), "no confirmation");
    assert!(text(&reader, "main").await.contains("This key is read-only"));
    let csrf = find(&reader, "input[name=csrf]").await.attr("value").await.unwrap().unwrap();
    let session = session_of(&reader, &admin.base).await;
    let start = format!("/console/tenants/{tenant}/replays");
    let posted = session.post(&start, Some(&admin.base), &[("csrf", &csrf), ("event_id", &last)]).await;
    assert_eq!(posted.status(), 403);
    until_status(&admin, &root, &tenant, &last, "failed").await;
    assert_eq!(agent.count_for(&last), 0);
    reader.close().await.unwrap();

    // A customer's portal that may write: the same preview has the confirmation, and the job
    // handles the last failure; the failed list is empty.
    let writer = driver.browser("bulk-writer").await;
    sign_in_by_link(&writer, &admin, &root, &key(&db, Some(&tenant), false).await, &tenant).await;
    preview_ticked(&writer, &admin.base, &tenant, &[&last]).await;
    assert_eq!(column(&cells(&writer, "tbody tr").await, 0), [last.as_str()]);
    click(&writer, "#confirm-retry button").await;
    until_job_finished(&writer).await;
    assert_eq!(text(&writer, "#job-progress").await, "1 of 1 done: 1 succeeded (1 handled)");
    until_status(&admin, &root, &tenant, &last, "handled").await;
    writer.goto(&format!("{}{failed}", admin.base)).await.unwrap();
    assert_eq!(text(&writer, "#total").await, "0 events");
    assert_eq!(sent(&all), 4, "each sent once, by its retry");
    writer.close().await.unwrap();
    server.shutdown().await;
}

/// The overview in Chromium: support opens it from the navigation and reads the tenant whose
/// agent failed most first (before one that failed less and comes first by name; a tenant
/// without failures not at all) and the agent Doorman disabled for failing; each links to its
/// tenant. A customer's portal has no Overview in its navigation and is refused the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_lists_the_tenant_failing_most_first_and_its_disabled_agent_to_support_only() {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let (failing, answering) = (FakeAgent::start(AGENT_SECRET), FakeAgent::start(AGENT_SECRET));
    let root = key(&db, None, false).await;
    let seldom = onboarded(&admin, &root, "Acme Seldom", "TSELDOM", failing.url()).await;
    let often = onboarded(&admin, &root, "Zenith Often", "TOFTEN", failing.url()).await;
    let calm = onboarded(&admin, &root, "Calm Co", "TCALMOVER", answering.url()).await;
    // Two failures in a row open a tenant's circuit; an agent failing for a second is disabled.
    let flags = ["--circuit-failures", "2", "--circuit-cooldown", "1h", "--agent-disable-after", "1s"];
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &flags)).await.unwrap();
    let serving = format!("http://{}", server.addr());
    failing.answer_with(500);
    for (team, tenant, event) in
        [("TSELDOM", &seldom, "EvSeldom1"), ("TOFTEN", &often, "EvOften1"), ("TOFTEN", &often, "EvOften2")]
    {
        assert_eq!(post_event(&http_client(), &serving, team, event).await, 200);
        until_status(&admin, &root, tenant, event, "failed").await;
    }
    assert_eq!(post_event(&http_client(), &serving, "TCALMOVER", "EvCalm1").await, 200);
    until_status(&admin, &root, &calm, "EvCalm1", "handled").await;
    // Looked for every second: given as long as the disabling test gives it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let agent = admin.get(&format!("/admin/v1/tenants/{often}/agent"), &root).await;
        if agent.body["disabled_at"].is_string() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "Zenith's agent never disabled: {agent:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The serving process's counts reach the rollup with its shutdown's flush.
    server.shutdown().await;

    let driver = Chromedriver::start().await;
    let support = driver.browser("overview-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;
    support.find(Locator::LinkText("Overview")).await.unwrap().click().await.unwrap();
    arrive(&support, "/console/overview").await;
    assert_eq!(text(&support, "h1").await, "Overview");
    let failing_most = cells(&support, "#failing-most tbody tr").await;
    assert_eq!(
        failing_most.iter().map(|row| (row[0].as_str(), row[1].as_str())).collect::<Vec<_>>(),
        [("Zenith Often", "2"), ("Acme Seldom", "1")],
        "the most failures first; Calm Co, without one, absent: {failing_most:?}"
    );
    let agents = cells(&support, "#troubled-agents tbody tr").await;
    assert_eq!(column(&agents, 0), ["Zenith Often"], "{agents:?}");
    assert!(agents[0][1] != "—" && agents[0][2] != "—", "failing since, and disabled: {agents:?}");
    // Its name leads to its tenant, where the agent is said to be disabled.
    let agent_link = find(&support, "#troubled-agents tbody a").await;
    agent_link.click().await.unwrap();
    arrive(&support, &format!("/console/tenants/{often}")).await;
    assert!(text(&support, "#agent-state").await.contains("disabled"));
    support.close().await.unwrap();

    // A customer: no Overview in the navigation, and the page refused.
    let customer = driver.browser("overview-customer").await;
    sign_in_by_link(&customer, &admin, &root, &key(&db, Some(&seldom), true).await, &seldom).await;
    let nav = text(&customer, "header nav").await;
    assert!(!nav.contains("Overview") && nav.contains("My tenant"), "{nav}");
    customer.goto(&format!("{}/console/overview", admin.base)).await.unwrap();
    assert_eq!(text(&customer, "h1").await, "Forbidden");
    assert!(!customer.source().await.unwrap().contains("Zenith"), "nothing of the overview shown");
    let refused = session_of(&customer, &admin.base).await.get("/console/overview").await;
    assert_eq!(refused.status(), 403);
    customer.close().await.unwrap();
}

/// The text of the chart `id`'s caption, the accessible name of its SVG, and how many of its
/// bars are failures.
async fn chart(browser: &Client, id: &str) -> (String, String, usize) {
    let caption = text(browser, &format!("figure#{id} figcaption")).await;
    let svg = find(browser, &format!("figure#{id} svg[role=img]")).await;
    let name = svg.attr("aria-label").await.unwrap().unwrap_or_default();
    let failed = browser.find_all(Locator::Css(&format!("figure#{id} rect.bar-failed"))).await.unwrap().len();
    (caption, name, failed)
}

/// A tenant's charts in Chromium, drawn from the activity rollup (the serving process's
/// counts, flushed at its shutdown): support opens the tenant from the list and reads its day
/// and week with the failures drawn as their own bars, and follows the failure count to the
/// failed events; the tenant's customer, signed in by a link, sees the same charts of their
/// own tenant and cannot open another tenant's page (404, as a tenant that does not exist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_charts_show_its_failures_to_support_and_to_its_own_portal_and_no_one_elses() {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Charted Co", "TCHARTED", agent.url()).await;
    let other = onboarded(&admin, &root, "Other Co", "TCHARTOTHER", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    let dispatched = async |team: &str, tenant: &str, event: &str, status: &str| {
        assert_eq!(post_event(&http_client(), &serving, team, event).await, 200);
        until_status(&admin, &root, tenant, event, status).await;
    };
    agent.answer_with(500);
    dispatched("TCHARTED", &tenant, "EvCharted1", "failed").await;
    dispatched("TCHARTED", &tenant, "EvCharted2", "failed").await;
    agent.answer_with(200);
    dispatched("TCHARTED", &tenant, "EvCharted3", "handled").await;
    for event in ["EvOther1", "EvOther2", "EvOther3", "EvOther4"] {
        dispatched("TCHARTOTHER", &other, event, "handled").await;
    }
    // The serving process's counts reach the rollup with its shutdown's flush.
    server.shutdown().await;
    let day = "3 dispatches over 24 hours: 1 taken, 2 failed";
    let week = "3 dispatches over 168 hours: 1 taken, 2 failed";

    let driver = Chromedriver::start().await;
    let support = driver.browser("charts-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;
    support.find(Locator::LinkText("Charted Co")).await.unwrap().click().await.unwrap();
    arrive(&support, &format!("/console/tenants/{tenant}")).await;
    assert_eq!(text(&support, "#failed-today").await, "2 failed dispatches in the last 24 hours.");
    let (caption, name, failed) = chart(&support, "day").await;
    assert_eq!(caption, format!("Dispatches, last 24 hours: {day}"));
    assert_eq!(name, caption, "the SVG's accessible name says its totals");
    assert!(failed >= 1, "the failures drawn as bars of their own");
    let (caption, _, failed) = chart(&support, "week").await;
    assert_eq!((caption, failed >= 1), (format!("Dispatches, last 7 days: {week}"), true));
    let (caption, _, _) = chart(&support, "day-latency").await;
    assert!(caption.starts_with("Dispatch time, last 24 hours: mean dispatch time "), "{caption}");
    // The count leads to the failures.
    support.find(Locator::LinkText("2 failed dispatches")).await.unwrap().click().await.unwrap();
    arrive(&support, &format!("/console/tenants/{tenant}/events?state=failed")).await;
    let mut failures = column(&cells(&support, "tbody tr").await, 1).join(" ");
    failures.push(' ');
    assert!(failures.contains("EvCharted1 ") && failures.contains("EvCharted2 "), "{failures}");
    support.close().await.unwrap();

    // The tenant's customer: the same charts, of their tenant only.
    let customer = driver.browser("charts-customer").await;
    sign_in_by_link(&customer, &admin, &root, &key(&db, Some(&tenant), true).await, &tenant).await;
    assert_eq!(text(&customer, "h1").await, "Charted Co");
    assert_eq!(chart(&customer, "day").await.0, format!("Dispatches, last 24 hours: {day}"));
    assert_eq!(chart(&customer, "week").await.0, format!("Dispatches, last 7 days: {week}"));
    customer.goto(&format!("{}/console/tenants/{other}", admin.base)).await.unwrap();
    assert_eq!(text(&customer, "h1").await, "Not Found");
    let source = customer.source().await.unwrap();
    assert!(!source.contains("Other Co") && !source.contains("4 dispatches"), "nothing of it: {source}");
    let refused = session_of(&customer, &admin.base).await.get(&format!("/console/tenants/{other}")).await;
    assert_eq!(refused.status(), 404);
    customer.close().await.unwrap();
}

/// An event's page in Chromium, as three people read it. Support, with a key that does not
/// read payloads, reads the attempts (the live dispatch the agent failed with 500), the
/// request Doorman sends (the agent's URL, each header in order, the signature shown as
/// redacted and none the agent received anywhere on the page) and why no payload is shown;
/// it makes a key that reads payloads on the keys page, and that key, signed in and finding
/// the event by its id, reads the payload too. The tenant's customer, signed in by a link,
/// reads their event's attempts and request and no payload, and cannot open another tenant's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_page_shows_attempts_and_the_redacted_request_to_all_and_the_payload_to_a_reading_key_only()
{
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Event Co", "TEVENTPAGE", agent.url()).await;
    let other = onboarded(&admin, &root, "Other Co", "TEVENTOTHER", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &serving, "TEVENTPAGE", "EvShown").await, 200);
    until_status(&admin, &root, &tenant, "EvShown", "failed").await;
    assert_eq!(post_event(&http_client(), &serving, "TEVENTOTHER", "EvTheirs").await, 200);
    until_status(&admin, &root, &other, "EvTheirs", "failed").await;
    server.shutdown().await;
    let signatures: Vec<String> =
        agent.arrivals().iter().map(|a| a.webhook_signature.trim_start_matches("v1,").to_owned()).collect();
    assert_eq!(signatures.len(), 2, "the agent was sent both events");
    let page = format!("/console/tenants/{tenant}/events/EvShown");
    let headers = [
        "host",
        "user-agent",
        "content-type",
        "content-length",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ];
    // What every session that sees the event reads: the failed dispatch, and the request.
    let attempts_and_request = async |browser: &Client, who: &str| {
        let attempts = cells(browser, "#attempts tbody tr").await;
        assert_eq!(attempts.len(), 1, "{who}: {attempts:?}");
        let live = &attempts[0];
        assert_eq!(
            (live[0].as_str(), live[3].as_str(), live[4].as_str()),
            ("live", "failed (status)", "500"),
            "{who}: {live:?}"
        );
        assert!(live[5].ends_with(" ms") && live[6].contains("the agent answered 500"), "{who}: {live:?}");
        assert_eq!(text(browser, "#request-line").await, format!("POST {}", agent.url()), "{who}");
        let sent = cells(browser, "#request-headers tbody tr").await;
        assert_eq!(column(&sent, 0), headers, "{who}: in the order Doorman writes them");
        assert_eq!(sent[4][1], "evt_EvShown", "{who}");
        assert_eq!(sent[6][1], "v1,… (redacted)", "{who}");
        let source = browser.source().await.unwrap();
        for secret in signatures.iter().map(String::as_str).chain([AGENT_SECRET]) {
            assert!(!source.contains(secret), "{who}: {secret} on the page");
        }
    };

    // Support without read_payloads: attempts and request, and why there is no payload.
    let driver = Chromedriver::start().await;
    let support = driver.browser("event-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;
    support.goto(&format!("{}/console/tenants/{tenant}/events?state=failed", admin.base)).await.unwrap();
    support.find(Locator::LinkText("EvShown")).await.unwrap().click().await.unwrap();
    arrive(&support, &page).await;
    attempts_and_request(&support, "support").await;
    assert!(support.find_all(Locator::Css("#payload")).await.unwrap().is_empty(), "no payload");
    assert!(text(&support, "#payload-hidden").await.starts_with("Not shown: this key may not read payloads"));
    assert!(!support.source().await.unwrap().contains("U0LAN0Z89"), "nothing of the message");

    // It makes a key that reads payloads: ticked on the keys page, shown once.
    support.goto(&format!("{}/console/keys", admin.base)).await.unwrap();
    find(&support, "#key-name").await.send_keys("payload reader").await.unwrap();
    click(&support, "#key-read-payloads").await;
    click(&support, "form.stack button[type=submit]").await;
    let reads = find(&support, "#new-key").await.attr("value").await.unwrap().expect("the new key");
    assert!(text(&support, "tbody").await.contains("read-write, reads payloads"));
    support.close().await.unwrap();

    // That key finds the event by its id and reads its payload, the message in it.
    let reader = driver.browser("event-reader").await;
    sign_in(&reader, &admin.base, &reads).await;
    arrive(&reader, "/console/tenants").await;
    reader.find(Locator::LinkText("Find an event")).await.unwrap().click().await.unwrap();
    find(&reader, "main input[name=event_id]").await.send_keys("EvShown").await.unwrap();
    click(&reader, "main form button[type=submit]").await;
    arrive(&reader, "/console/events?event_id=EvShown").await;
    find(&reader, &format!("main a[href='{page}']")).await.click().await.unwrap();
    arrive(&reader, &page).await;
    attempts_and_request(&reader, "reader").await;
    let payload = text(&reader, "#payload").await;
    assert!(
        payload.contains("\"event_id\": \"EvShown\"") && payload.contains("<@U0LAN0Z89> hello"),
        "{payload}"
    );
    assert!(reader.find_all(Locator::Css("#payload-hidden")).await.unwrap().is_empty());
    reader.close().await.unwrap();

    // The tenant's customer: their event's attempts and request, no payload; not another's.
    let customer = driver.browser("event-customer").await;
    sign_in_by_link(&customer, &admin, &root, &key(&db, Some(&tenant), true).await, &tenant).await;
    customer.find(Locator::LinkText("Failed events")).await.unwrap().click().await.unwrap();
    customer.find(Locator::LinkText("EvShown")).await.unwrap().click().await.unwrap();
    arrive(&customer, &page).await;
    attempts_and_request(&customer, "customer").await;
    assert!(customer.find_all(Locator::Css("#payload")).await.unwrap().is_empty(), "no payload");
    assert!(find(&customer, "#payload-hidden").await.text().await.unwrap().starts_with("Not shown"));
    assert!(!customer.source().await.unwrap().contains("U0LAN0Z89"), "nothing of the message");
    customer.goto(&format!("{}/console/tenants/{other}/events/EvTheirs", admin.base)).await.unwrap();
    assert_eq!(text(&customer, "h1").await, "Not Found");
    assert!(!customer.source().await.unwrap().contains("Other Co"), "nothing of it");
    customer.close().await.unwrap();
}

/// Issue 42's "never to a read-only portal key unless the tenant allows", in Chromium. A
/// customer's read-only portal key made to read payloads, signed in by a link, opens its failed
/// event and reads no payload, told that its organisation has not allowed it (not that the key
/// may not). Support opens the tenant's page, reads that read-only portals may not, and turns it
/// on with the page's button (the notice and the page say so, the tenant's document and the
/// audit trail too). The customer reloads the event and reads the payload, the message in it.
/// Support turns it off again and the customer's page hides it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn support_lets_a_tenants_read_only_portals_read_payloads_and_its_portal_then_reads_one() {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let agent = FakeAgent::start(AGENT_SECRET);
    let root = key(&db, None, false).await;
    let tenant = onboarded(&admin, &root, "Portal Co", "TPORTALPAGE", agent.url()).await;
    let server = doorman_app::slack::start(serve_config(&db.server_url(), &[])).await.unwrap();
    let serving = format!("http://{}", server.addr());
    agent.answer_with(500);
    assert_eq!(post_event(&http_client(), &serving, "TPORTALPAGE", "EvPortalPage").await, 200);
    until_status(&admin, &root, &tenant, "EvPortalPage", "failed").await;
    server.shutdown().await;
    let asked = json!({"name": "portal co", "tenant_id": tenant, "read_only": true, "read_payloads": true});
    let made = admin.post("/admin/v1/keys", &root, asked).await;
    assert_eq!(made.status, 201, "{made:?}");
    let portal = made.body["key"].as_str().unwrap().to_owned();
    let event_page = format!("/console/tenants/{tenant}/events/EvPortalPage");
    let tenant_page = format!("/console/tenants/{tenant}");

    // The customer, signed in by a link: their event, and why its payload is not shown.
    let driver = Chromedriver::start().await;
    let customer = driver.browser("portal-payloads-customer").await;
    sign_in_by_link(&customer, &admin, &root, &portal, &tenant).await;
    assert!(text(&customer, "#portals-state").await.starts_with("Not allowed"), "its page says so too");
    assert!(customer.find_all(Locator::Css("#portals-payloads-on")).await.unwrap().is_empty(), "no form");
    customer.find(Locator::LinkText("Failed events")).await.unwrap().click().await.unwrap();
    customer.find(Locator::LinkText("EvPortalPage")).await.unwrap().click().await.unwrap();
    arrive(&customer, &event_page).await;
    let hidden_by_organisation = async |browser: &Client| {
        assert!(browser.find_all(Locator::Css("#payload")).await.unwrap().is_empty(), "no payload");
        let why = text(browser, "#payload-hidden").await;
        assert!(why.starts_with("Not shown: your organisation has not allowed"), "{why}");
        assert!(!browser.source().await.unwrap().contains("U0LAN0Z89"), "nothing of the message");
    };
    hidden_by_organisation(&customer).await;

    // Support turns it on from the tenant's page.
    let support = driver.browser("portal-payloads-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;
    support.find(Locator::LinkText("Portal Co")).await.unwrap().click().await.unwrap();
    arrive(&support, &tenant_page).await;
    assert!(text(&support, "#portals-state").await.starts_with("Not allowed"));
    click(&support, "#portals-payloads-on").await;
    arrive(&support, &format!("{tenant_page}?done=portals-payloads-on")).await;
    assert!(text(&support, ".notice").await.starts_with("Read-only portal keys made to read payloads"));
    assert!(text(&support, "#portals-state").await.starts_with("Allowed"));
    let doc = admin.get(&format!("/admin/v1/tenants/{tenant}"), &root).await.body;
    assert_eq!(doc["read_only_portals_read_payloads"], true, "{doc}");
    let trail = admin.get(&format!("/admin/v1/audit?tenant={tenant}"), &root).await.body;
    let latest = &trail["items"][0];
    assert_eq!(
        (&latest["action"], &latest["target"], &latest["actor_name"]),
        (&json!("tenant.read_only_portals_read_payloads"), &json!("on"), &json!("test key")),
        "{trail}"
    );

    // The customer's event page now shows the payload, the message in it.
    customer.refresh().await.unwrap();
    let payload = text(&customer, "#payload").await;
    assert!(
        payload.contains("\"event_id\": \"EvPortalPage\"") && payload.contains("<@U0LAN0Z89> hello"),
        "{payload}"
    );
    assert!(customer.find_all(Locator::Css("#payload-hidden")).await.unwrap().is_empty());

    // Off again: hidden again, from the customer's next page.
    click(&support, "#portals-payloads-off").await;
    arrive(&support, &format!("{tenant_page}?done=portals-payloads-off")).await;
    assert!(text(&support, "#portals-state").await.starts_with("Not allowed"));
    customer.refresh().await.unwrap();
    find(&customer, "#payload-hidden").await;
    hidden_by_organisation(&customer).await;
    support.close().await.unwrap();
    customer.close().await.unwrap();
}

/// Issue 42's lists and searches, clicked through in a browser: support picks a new key's
/// tenant from a search by name and makes the key for it; reads a tenant's events in every
/// state at once, with their total; and a customer's portal, asked for an id two tenants have,
/// finds its own tenant's event alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_browser_support_picks_a_keys_tenant_and_lists_every_state_and_a_portal_finds_only_its_own_event()
 {
    let db = TestDatabase::create().await;
    let admin = console_at_its_address(&db, &[]).await;
    let root = key(&db, None, false).await;
    let acme = admin.tenant(&root, "Acme Lists").await;
    let globex = admin.tenant(&root, "Globex Lists").await;
    // Acme: one event handled, one failed, one in flight; Globex: the same id as Acme's first.
    for (tenant, id, outcome) in [
        (&acme, "EvShared", "handled_at = now()"),
        (&acme, "EvFailedOne", "failure_reason = 'agent answered HTTP 500', failed_at = now()"),
        (&acme, "EvInFlight", "claimed_at = now()"),
        (&globex, "EvShared", "handled_at = now()"),
    ] {
        let mut owner = db.owner().await;
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query(format!(
                "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
                 VALUES ('{tenant}', 'slack', '{id}', 'app_mention', 0, now() - interval '1 minute')"
            )),
            &mut owner,
        )
        .await
        .unwrap();
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query(format!(
                "UPDATE messaging_event_receipts SET {outcome} WHERE tenant_id = '{tenant}' AND external_event_id = '{id}'"
            )),
            &mut owner,
        )
        .await
        .unwrap();
    }

    let driver = Chromedriver::start().await;
    let support = driver.browser("lists-support").await;
    sign_in(&support, &admin.base, &root).await;
    arrive(&support, "/console/tenants").await;

    // The keys page: "Globex" found by name, chosen in the picker, the key made for it.
    support.find(Locator::LinkText("Keys")).await.unwrap().click().await.unwrap();
    arrive(&support, "/console/keys").await;
    find(&support, "#tenant-search").await.send_keys("globex").await.unwrap();
    click(&support, "form[role=search] button").await;
    arrive(&support, "/console/keys?tenant_search=globex").await;
    assert_eq!(text(&support, "#picker-total").await, "1 tenant found for “globex”.");
    let chosen = find(&support, "#key-tenant").await.prop("value").await.unwrap();
    assert_eq!(chosen.as_deref(), Some(globex.as_str()), "the one found is chosen");
    find(&support, "#key-name").await.send_keys("globex portal").await.unwrap();
    click(&support, "form.stack button[type=submit]").await;
    find(&support, "#new-key").await;
    let keys = admin.get("/admin/v1/keys", &root).await.body;
    let listed = keys["items"].as_array().unwrap_or_else(|| keys.as_array().unwrap());
    let made = listed.iter().find(|k| k["name"] == "globex portal").expect("the key made");
    assert_eq!(made["tenant_id"], json!(globex), "{made}");

    // Acme's events in every state at once, with their total.
    support.goto(&format!("{}/console/tenants/{acme}/events?state=failed", admin.base)).await.unwrap();
    find(&support, "#state").await.select_by_value("all").await.unwrap();
    click(&support, "form.filters button[type=submit]").await;
    find(&support, "#total").await;
    assert_eq!(text(&support, "h1").await, "Events: all states");
    assert_eq!(text(&support, "#total").await, "3 events");
    let listed = cells(&support, "main table tbody tr").await;
    let mut ids: Vec<&str> = listed.iter().map(|row| row[0].as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["EvFailedOne", "EvInFlight", "EvShared"], "{listed:?}");
    support.close().await.unwrap();

    // Acme's customer asks for the id both tenants have: its own event, not Globex's.
    let customer = driver.browser("lists-customer").await;
    sign_in_by_link(&customer, &admin, &root, &key(&db, Some(&acme), true).await, &acme).await;
    customer.find(Locator::LinkText("Find an event")).await.unwrap().click().await.unwrap();
    find(&customer, "#event-id").await.send_keys("EvShared").await.unwrap();
    click(&customer, "main form button[type=submit]").await;
    arrive(&customer, "/console/events?event_id=EvShared").await;
    let found = cells(&customer, "main table tbody tr").await;
    assert_eq!(column(&found, 0), ["Acme Lists"], "{found:?}");
    assert!(!customer.source().await.unwrap().contains(&globex), "nothing of Globex on the page");
    customer.close().await.unwrap();
}

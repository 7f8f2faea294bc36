//! The install flow in a real browser: Debian's headless Chromium driven over WebDriver
//! (`chromium-driver`). Doorman answers on `127.0.0.1` and the fake Slack on `localhost`, two
//! sites, so the install cookie must survive a real cross-site redirect (`SameSite=Lax`); a
//! second browser profile, with its own cookie jar, tries the first one's state.
//!
//! `just browser` (which `just test` runs first) installs `chromium` and `chromium-driver` when
//! they are missing; `CHROMIUM` and `CHROMEDRIVER` name other binaries.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

use crate::helpers::TestApp;
use crate::install::{customer, slack_flags};
use doorman_testkit::fake_slack::{FakeSlack, Workspace};

/// A `chromedriver` on a free loopback port, killed (with its browsers) on drop.
pub(crate) struct Chromedriver {
    child: Child,
    url: String,
    profiles: PathBuf,
}

fn binary(variable: &str, candidates: &[&str]) -> PathBuf {
    if let Ok(path) = std::env::var(variable) {
        return path.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    candidates
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .chain(candidates.iter().map(|name| PathBuf::from("/usr/lib/chromium").join(name)))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("the browser test needs {candidates:?} (run `just browser`, or set {variable})")
        })
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Chromedriver {
    pub(crate) async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// With `env` for the driver and the browsers it starts (`TZ`: the browsers' time zone).
    pub(crate) async fn start_with(env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let child = Command::new(binary("CHROMEDRIVER", &["chromedriver"]))
            .arg(format!("--port={port}"))
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        let profiles = std::env::temp_dir().join(format!("doorman-browser-{}-{port}", std::process::id()));
        let driver = Self { child, url, profiles };
        let deadline = Instant::now() + Duration::from_secs(20);
        while reqwest::get(format!("{}/status", driver.url)).await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer within 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        driver
    }

    /// A browser with a profile (cookie jar) of its own.
    pub(crate) async fn browser(&self, profile: &str) -> Client {
        let dir = self.profiles.join(profile);
        let options = json!({
            "binary": binary("CHROMIUM", &["chromium", "chromium-browser"]),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", format!("--user-data-dir={}", dir.display())],
        });
        let capabilities = json!({"goog:chromeOptions": options});
        let serde_json::Value::Object(capabilities) = capabilities else { unreachable!() };
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profiles);
    }
}

async fn heading(browser: &Client) -> String {
    browser.find(Locator::Css("h1")).await.unwrap().text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_installs_across_sites_and_another_profile_cannot_use_its_state() {
    let slack = FakeSlack::start("localhost", Workspace::team("TBROWSER", "Browser Co"));
    slack.ask_consent(true);
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let mut flags = slack_flags(&slack, &public);
    flags.extend(["--bind".to_owned(), bind]);
    let app = TestApp::spawn_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let (_, link) = customer(&app, "Acme").await;

    let driver = Chromedriver::start().await;
    let (alice, bob) = (driver.browser("alice").await, driver.browser("bob").await);

    // Alice opens her install link: Doorman sets the cookie and sends her to Slack's consent.
    alice.goto(&format!("{public}/slack/install/{link}")).await.unwrap();
    let at_slack = alice.current_url().await.unwrap();
    assert_eq!(at_slack.host_str(), Some("localhost"), "{at_slack}");
    let allow = alice.find(Locator::Id("allow")).await.unwrap();
    let back = allow.attr("href").await.unwrap().expect("the Allow link");
    assert!(back.starts_with(&format!("{public}/slack/oauth/callback?code=")), "{back}");

    // Bob, another profile without Alice's cookie, follows the same way back: refused, and
    // Slack is never asked for a token.
    bob.goto(&back).await.unwrap();
    assert_eq!(heading(&bob).await, "Install not accepted");
    assert!(bob.source().await.unwrap().contains("not started in this browser"));
    assert_eq!(slack.exchanges(), 0, "a refused callback never reaches Slack");

    // Alice clicks Allow: a top-level cross-site navigation, which carries her Lax cookie.
    allow.click().await.unwrap();
    let done = alice.current_url().await.unwrap();
    assert_eq!(done.host_str(), Some("127.0.0.1"), "{done}");
    assert_eq!(heading(&alice).await, "Installed");
    let page = alice.source().await.unwrap();
    assert!(page.contains("Browser Co") && page.contains("Acme"), "{page}");
    assert_eq!(slack.exchanges(), 1);

    // The state is spent: Bob trying again, now or later, is still refused.
    bob.goto(&back).await.unwrap();
    assert_eq!(heading(&bob).await, "Install not accepted");
    assert_eq!(slack.exchanges(), 1);

    // And the installed workspace's events reach the agent with the bot token.
    assert_eq!(app.event("TBROWSER", "EvBrowser", None).await.status(), 200);
    app.quiesce().await;
    assert_eq!(app.agent.received()[0].document["authorization"]["bot_token"], slack.current_bot_token());

    alice.close().await.unwrap();
    bob.close().await.unwrap();
}

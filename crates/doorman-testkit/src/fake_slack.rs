//! A fake Slack for the install flow: its authorize page (which approves, or cancels, at
//! once and sends the browser back with a code, or shows an "Allow" link as Slack's consent
//! screen does) and `oauth.v2.access` (code exchanges and
//! token refreshes, with or without rotation, or refusals), on loopback. It counts what it was
//! asked, so a test can say "Slack was never called".

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::json;

pub const CLIENT_ID: &str = "1234567890.0987654321";
pub const CLIENT_SECRET: &str = "fake-slack-client-secret";

/// What the fake Slack grants on an install.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub team: Option<(String, String)>,
    pub enterprise: Option<(String, String)>,
    pub org_wide: bool,
}

impl Workspace {
    pub fn team(id: &str, name: &str) -> Self {
        Self { team: Some((id.into(), name.into())), enterprise: None, org_wide: false }
    }

    /// A team install of a team inside an enterprise grid.
    pub fn team_in(team: &str, enterprise: &str, name: &str) -> Self {
        Self {
            team: Some((team.into(), name.into())),
            enterprise: Some((enterprise.into(), name.into())),
            org_wide: false,
        }
    }

    pub fn org_wide(enterprise: &str, name: &str) -> Self {
        Self { team: None, enterprise: Some((enterprise.into(), name.into())), org_wide: true }
    }
}

#[derive(Debug)]
struct State {
    workspace: Workspace,
    /// Authorize answers `error=access_denied` (the user clicked Cancel).
    deny: bool,
    /// Authorize shows a page whose "Allow" link goes back, instead of redirecting at once.
    consent: bool,
    /// Exchanges answer `"ok": false` with this code.
    refuse: Option<String>,
    /// With token rotation: tokens expire in this many seconds.
    expires_in: Option<i64>,
    /// How long a refresh takes (to let concurrent ones overlap).
    refresh_delay: Duration,
    /// Codes handed out on authorize, with the redirect URI asked for, until exchanged.
    codes: HashMap<String, String>,
    /// The refresh token that works now.
    refresh_token: Option<String>,
    issued: u64,
    exchanges: usize,
    refreshes: usize,
    authorizations: usize,
}

/// A running fake Slack; stops when dropped.
#[derive(Debug)]
pub struct FakeSlack {
    base: String,
    state: Arc<Mutex<State>>,
    server: actix_web::dev::ServerHandle,
}

impl FakeSlack {
    /// Listens on loopback; `host` names it in its URLs (`localhost` makes it another site than
    /// `127.0.0.1` for a browser's cookies).
    pub fn start(host: &str, workspace: Workspace) -> Self {
        let state = Arc::new(Mutex::new(State {
            workspace,
            deny: false,
            consent: false,
            refuse: None,
            expires_in: None,
            refresh_delay: Duration::ZERO,
            codes: HashMap::new(),
            refresh_token: None,
            issued: 0,
            exchanges: 0,
            refreshes: 0,
            authorizations: 0,
        }));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let base = format!("http://{host}:{}", listener.local_addr().unwrap().port());
        let data = web::Data::from(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/oauth/v2/authorize", web::get().to(authorize))
                .route("/api/oauth.v2.access", web::post().to(access))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)
        .expect("listen")
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Self { base, state, server: handle }
    }

    /// `DOORMAN_SLACK_API_URL`
    pub fn api_url(&self) -> String {
        format!("{}/api", self.base)
    }

    /// `DOORMAN_SLACK_AUTHORIZE_URL`
    pub fn authorize_url(&self) -> String {
        format!("{}/oauth/v2/authorize", self.base)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn grant(&self, workspace: Workspace) {
        self.lock().workspace = workspace;
    }

    /// The user cancels at Slack.
    pub fn deny(&self, deny: bool) {
        self.lock().deny = deny;
    }

    /// Show a consent page with an "Allow" link (`#allow`) rather than redirecting at once, so
    /// a browser test can stop at Slack, as a user does.
    pub fn ask_consent(&self, ask: bool) {
        self.lock().consent = ask;
    }

    /// Exchanges answer `"ok": false, "error": code`.
    pub fn refuse_with(&self, code: Option<&str>) {
        self.lock().refuse = code.map(str::to_owned);
    }

    /// Grant rotating tokens expiring in `seconds`.
    pub fn rotate(&self, seconds: i64) {
        self.lock().expires_in = Some(seconds);
    }

    /// Slack no longer honours the refresh token it issued (rotated elsewhere, or revoked):
    /// refreshes answer `invalid_refresh_token`.
    pub fn forget_refresh_token(&self) {
        self.lock().refresh_token = None;
    }

    /// Slack honours `token` as the refresh token it issued (for tests that store an
    /// installation directly rather than through the install flow).
    pub fn honour_refresh_token(&self, token: &str) {
        self.lock().refresh_token = Some(token.to_owned());
    }

    pub fn refresh_delay(&self, delay: Duration) {
        self.lock().refresh_delay = delay;
    }

    /// Code exchanges asked for (successful or not).
    pub fn exchanges(&self) -> usize {
        self.lock().exchanges
    }

    /// Refreshes that issued new tokens.
    pub fn refreshes(&self) -> usize {
        self.lock().refreshes
    }

    /// Authorize pages served.
    pub fn authorizations(&self) -> usize {
        self.lock().authorizations
    }

    /// The bot token most recently issued.
    pub fn current_bot_token(&self) -> String {
        bot_token(self.lock().issued)
    }
}

impl Drop for FakeSlack {
    fn drop(&mut self) {
        drop(self.server.stop(false));
    }
}

fn bot_token(n: u64) -> String {
    format!("xoxb-fake-{n:04}-token")
}

#[derive(Deserialize)]
struct Authorize {
    client_id: String,
    state: String,
    redirect_uri: String,
    #[serde(default)]
    scope: String,
}

async fn authorize(query: web::Query<Authorize>, state: web::Data<Mutex<State>>) -> HttpResponse {
    let mut s = state.lock().unwrap();
    s.authorizations += 1;
    if query.client_id != CLIENT_ID || query.scope.is_empty() {
        return HttpResponse::BadRequest().body("invalid client_id or no scope");
    }
    let back = if s.deny {
        format!("{}?error=access_denied&state={}", query.redirect_uri, encode(&query.state))
    } else {
        s.issued += 1;
        let code = format!("code-{}", s.issued);
        s.codes.insert(code.clone(), query.redirect_uri.clone());
        format!("{}?code={code}&state={}", query.redirect_uri, encode(&query.state))
    };
    if s.consent {
        let page = format!(
            "<!doctype html><title>Install on Slack</title><h1>Doorman wants to join your workspace</h1>\
             <a id=\"allow\" href=\"{}\">Allow</a>",
            back.replace('&', "&amp;").replace('"', "&quot;")
        );
        return HttpResponse::Ok().content_type("text/html; charset=utf-8").body(page);
    }
    HttpResponse::Found().insert_header(("location", back)).finish()
}

#[derive(Deserialize)]
struct Access {
    code: Option<String>,
    redirect_uri: Option<String>,
    grant_type: Option<String>,
    refresh_token: Option<String>,
}

async fn access(
    request: HttpRequest,
    form: web::Form<Access>,
    state: web::Data<Mutex<State>>,
) -> HttpResponse {
    let authorized = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|v| STANDARD.decode(v).ok())
        .is_some_and(|v| v == format!("{CLIENT_ID}:{CLIENT_SECRET}").as_bytes());
    if !authorized {
        return refuse("invalid_client_id");
    }
    if form.grant_type.as_deref() == Some("refresh_token") {
        let delay = state.lock().unwrap().refresh_delay;
        tokio::time::sleep(delay).await;
        let mut s = state.lock().unwrap();
        if form.refresh_token.is_none() || form.refresh_token != s.refresh_token {
            return refuse("invalid_refresh_token");
        }
        s.issued += 1;
        s.refreshes += 1;
        let refresh = format!("xoxe-1-fake-{}", s.issued);
        s.refresh_token = Some(refresh.clone());
        return HttpResponse::Ok().json(json!({
            "ok": true, "access_token": bot_token(s.issued), "token_type": "bot",
            "refresh_token": refresh, "expires_in": s.expires_in.unwrap_or(43200),
        }));
    }
    let mut s = state.lock().unwrap();
    s.exchanges += 1;
    if let Some(code) = &s.refuse {
        return refuse(&code.clone());
    }
    let Some(code) = form.code.as_deref() else { return refuse("invalid_code") };
    match s.codes.remove(code) {
        Some(redirect) if Some(redirect.as_str()) == form.redirect_uri.as_deref() => {}
        Some(_) => return refuse("bad_redirect_uri"),
        None => return refuse("invalid_code"),
    }
    let workspace = s.workspace.clone();
    let named =
        |pair: &Option<(String, String)>| pair.as_ref().map(|(id, name)| json!({"id": id, "name": name}));
    let mut answer = json!({
        "ok": true,
        "access_token": bot_token(s.issued),
        "token_type": "bot",
        "scope": "commands,chat:write",
        "bot_user_id": "U0KRQLJ9H",
        "app_id": "A0KRD7HC3",
        "team": named(&workspace.team),
        "enterprise": named(&workspace.enterprise),
        "is_enterprise_install": workspace.org_wide,
        "authed_user": {"id": "U1234"},
    });
    if let Some(expires_in) = s.expires_in {
        let refresh = format!("xoxe-1-fake-{}", s.issued);
        s.refresh_token = Some(refresh.clone());
        answer["refresh_token"] = json!(refresh);
        answer["expires_in"] = json!(expires_in);
    }
    HttpResponse::Ok().json(answer)
}

fn refuse(code: &str) -> HttpResponse {
    // Slack answers errors with HTTP 200 too.
    HttpResponse::Ok().json(json!({"ok": false, "error": code}))
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

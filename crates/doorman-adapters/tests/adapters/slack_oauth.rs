//! `oauth.v2.access` against the fake Slack over loopback: exchanges, refusals and refreshes.

use doorman_adapters::slack::oauth::{SlackApp, SlackOAuthClient};
use doorman_domain::ports::SlackOAuth;
use doorman_domain::{OAuthError, SlackToken};
use doorman_testkit::fake_slack::{self, FakeSlack, Workspace};

const REDIRECT: &str = "https://doorman.example/slack/oauth/callback";

fn client(slack: &FakeSlack, secret: &str) -> SlackOAuthClient {
    SlackOAuthClient::new(SlackApp {
        client_id: fake_slack::CLIENT_ID.into(),
        client_secret: secret.into(),
        api_url: slack.api_url(),
        redirect_uri: REDIRECT.into(),
    })
    .unwrap()
}

/// What a browser brings back from Slack's authorize page: the code.
async fn code(slack: &FakeSlack, client: &SlackOAuthClient) -> String {
    let link = client.app().authorize_link(&slack.authorize_url(), "commands,chat:write", "st").unwrap();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let back = http.get(link).send().await.unwrap();
    let location = back.headers()["location"].to_str().unwrap();
    let url = url::Url::parse(location).unwrap();
    assert_eq!(&location[..REDIRECT.len()], REDIRECT, "sent back to the redirect URI");
    url.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned()
}

#[tokio::test]
async fn a_code_is_exchanged_for_the_teams_grant() {
    let slack = FakeSlack::start("localhost", Workspace::team("T9TK3CUKW", "Acme HQ"));
    let client = client(&slack, fake_slack::CLIENT_SECRET);
    let grant = client.exchange(&code(&slack, &client).await).await.unwrap();
    assert_eq!(grant.workspace.team_id().map(|t| t.as_str()), Some("T9TK3CUKW"));
    assert!(!grant.workspace.is_enterprise_install());
    assert_eq!(grant.workspace_name, "Acme HQ");
    assert_eq!((grant.app_id.as_str(), grant.bot_user_id.as_str()), ("A0KRD7HC3", "U0KRQLJ9H"));
    assert_eq!(grant.bot_token.expose(), slack.current_bot_token());
    assert_eq!(grant.scopes, "commands,chat:write");
    assert!(grant.refresh_token.is_none() && grant.expires_at.is_none(), "no rotation asked for");

    // A code is good once.
    let again = client.exchange("code-1").await.unwrap_err();
    assert_eq!(again, OAuthError::Refused("invalid_code".into()));
}

#[tokio::test]
async fn an_org_wide_install_is_named_by_its_enterprise() {
    let slack = FakeSlack::start("localhost", Workspace::org_wide("E0ORG", "Grid Co"));
    let client = client(&slack, fake_slack::CLIENT_SECRET);
    let grant = client.exchange(&code(&slack, &client).await).await.unwrap();
    assert!(grant.workspace.is_enterprise_install());
    assert_eq!(grant.workspace.team_id(), None);
    assert_eq!(grant.workspace.enterprise_id().map(|e| e.as_str()), Some("E0ORG"));
    assert_eq!(grant.workspace_name, "Grid Co");
}

#[tokio::test]
async fn slacks_refusals_come_back_as_its_code_and_never_quote_the_secret() {
    let slack = FakeSlack::start("localhost", Workspace::team("T1", "One"));
    let wrong = client(&slack, "not-the-secret");
    let error = wrong.exchange(&code(&slack, &wrong).await).await.unwrap_err();
    assert_eq!(error, OAuthError::Refused("invalid_client_id".into()));
    assert!(!format!("{error} {wrong:?}").contains("not-the-secret"));

    let right = client(&slack, fake_slack::CLIENT_SECRET);
    slack.refuse_with(Some("<script>"));
    let odd = right.exchange("code-x").await.unwrap_err();
    assert_eq!(odd, OAuthError::Refused("unknown_error".into()), "only snake_case codes are echoed");

    let nobody = SlackOAuthClient::new(SlackApp {
        client_id: "x".into(),
        client_secret: "y".into(),
        api_url: "http://127.0.0.1:9/api".into(),
        redirect_uri: REDIRECT.into(),
    })
    .unwrap();
    assert!(matches!(nobody.exchange("c").await.unwrap_err(), OAuthError::Unreachable(_)));
}

#[test]
fn the_apps_debug_shows_its_client_id_and_never_its_secret() {
    let app = SlackApp {
        client_id: "1234.5678".into(),
        client_secret: "s3cr3t-client-secret".into(),
        api_url: "https://slack.com/api".into(),
        redirect_uri: REDIRECT.into(),
    };
    let debug = format!("{app:?}");
    assert!(debug.contains("1234.5678") && debug.contains(REDIRECT), "{debug}");
    assert!(!debug.contains("s3cr3t"), "{debug}");
}

#[tokio::test]
async fn a_rotating_grant_refreshes_and_the_old_refresh_token_stops_working() {
    let slack = FakeSlack::start("localhost", Workspace::team("T1", "One"));
    slack.rotate(43200);
    let client = client(&slack, fake_slack::CLIENT_SECRET);
    let grant = client.exchange(&code(&slack, &client).await).await.unwrap();
    let first_refresh = grant.refresh_token.clone().expect("rotation: a refresh token");
    let expires = grant.expires_at.expect("rotation: an expiry");
    assert!((expires - chrono::Utc::now()).num_seconds() > 43000);

    let fresh = client.refresh(&first_refresh).await.unwrap();
    let lasts = (fresh.expires_at - chrono::Utc::now()).num_seconds();
    assert!((43000..=43200).contains(&lasts), "the new token lasts what Slack said: {lasts} s");
    assert_ne!(fresh.bot_token, grant.bot_token);
    assert_eq!(fresh.bot_token.expose(), slack.current_bot_token());
    assert_ne!(fresh.refresh_token, first_refresh);
    assert_eq!(slack.refreshes(), 1);

    let stale = client.refresh(&first_refresh).await.unwrap_err();
    assert_eq!(stale, OAuthError::Refused("invalid_refresh_token".into()));
    assert!(client.refresh(&SlackToken::new("xoxe-1-nope").unwrap()).await.is_err());
}

//! Org-wide links and team links inside an enterprise (decision 20): no command or install
//! takes deliveries another tenant's link receives, and a delivery goes to the install it says
//! it is for. (The admin API's refusal is in `admin_api`.)

use doorman_domain::TenantId;
use doorman_testkit::FakeAgent;
use doorman_testkit::fake_slack::{FakeSlack, Workspace};

use crate::helpers::{AGENT_SECRET, TestApp, doorman, ok};
use crate::install::{customer, install, slack_flags};

fn link(app: &TestApp, tenant: TenantId, args: &[&str]) -> std::process::Output {
    let tenant = tenant.to_string();
    doorman(app.db.url(), &[&["workspace", "link", "--tenant", tenant.as_str()], args].concat())
}

fn refused(output: &std::process::Output) -> String {
    assert!(!output.status.success(), "linked: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_a_team_inside_an_enterprise_another_tenant_holds_org_wide_and_the_reverse() {
    let app = TestApp::spawn().await;
    let op = app.db.operator();
    let (org, team) = (op.create_tenant("Org").await, op.create_tenant("Team").await);
    ok(&link(&app, org, &["--enterprise-id", "E1"]));

    let error = refused(&link(&app, team, &["--team-id", "T5", "--enterprise-id", "E1"]));
    assert!(error.contains("another tenant"), "{error}");
    // Linked as inside another enterprise, the team takes nothing of the org's.
    ok(&link(&app, team, &["--team-id", "T6", "--enterprise-id", "E2"]));
    let error = refused(&link(&app, org, &["--enterprise-id", "E2"]));
    assert!(error.contains("another tenant"), "{error}");

    let listed = ok(&doorman(app.db.url(), &["workspace", "list", "--tenant", &org.to_string()]));
    assert!(listed.contains("E1") && !listed.contains("E2"), "{listed}");
    let listed = ok(&doorman(app.db.url(), &["workspace", "list", "--tenant", &team.to_string()]));
    assert!(listed.contains("T6") && !listed.contains("T5"), "{listed}");
}

/// An Events API callback for team `T5` inside `E1`: with `authorizations` saying `flag`, or,
/// with `None`, none (only the top-level ids).
fn event(event_id: &str, flag: Option<bool>) -> String {
    let mut body = serde_json::json!({
        "token": "x", "team_id": "T5", "enterprise_id": "E1", "api_app_id": "A1",
        "event": {"type": "app_mention", "user": "U1", "text": "hi", "ts": "1.0", "channel": "C1", "event_ts": "1.0"},
        "type": "event_callback", "event_id": event_id, "event_time": 1
    });
    if let Some(flag) = flag {
        body["authorizations"] = serde_json::json!([{"enterprise_id": "E1", "team_id": if flag { None } else { Some("T5") },
            "user_id": "U0", "is_bot": true, "is_enterprise_install": flag}]);
    }
    body.to_string()
}

fn command(flag: Option<&str>) -> String {
    let trigger = uuid::Uuid::new_v4().simple();
    let flag = flag.map(|f| format!("&is_enterprise_install={f}")).unwrap_or_default();
    format!("team_id=T5&enterprise_id=E1{flag}&command=%2Fask&text=hi&user_id=U1&trigger_id={trigger}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_goes_to_the_install_it_says_it_is_for_and_an_unstated_one_to_the_org_wide_link() {
    let app = TestApp::spawn().await;
    let op = app.db.operator();
    let org_agent = FakeAgent::start(AGENT_SECRET);
    let org = op.create_tenant("Org").await;
    op.set_agent(org, org_agent.url(), AGENT_SECRET).await.unwrap();
    ok(&link(&app, org, &["--enterprise-id", "E1"]));
    // Linked by id with no enterprise: nothing says T5 is inside E1, so the link is allowed.
    let team = app.tenant("T5").await;

    let json = "application/json";
    let form = "application/x-www-form-urlencoded";
    for (id, flag) in [("EvOrg", Some(true)), ("EvTeam", Some(false)), ("EvUnstated", None)] {
        assert_eq!(app.post("/slack/events", json, event(id, flag).as_bytes(), None).await.status(), 200);
    }
    for flag in [Some("true"), Some("false"), None] {
        assert_eq!(app.post("/slack/commands", form, command(flag).as_bytes(), None).await.status(), 200);
    }
    app.quiesce().await;

    let tenants_of = |agent: &FakeAgent| -> Vec<(String, String)> {
        agent
            .received()
            .iter()
            .map(|r| {
                let flag = r.document["payload"]["is_enterprise_install"].as_str().unwrap_or("-").to_owned();
                (
                    r.external_event_id.clone().unwrap_or(format!("command:{flag}")),
                    r.document["tenant_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let mut to_org: Vec<String> = tenants_of(&org_agent).into_iter().map(|(what, _)| what).collect();
    let mut to_team: Vec<String> = tenants_of(&app.agent).into_iter().map(|(what, _)| what).collect();
    to_org.sort();
    to_team.sort();
    assert_eq!(to_org, ["EvOrg", "EvUnstated", "command:-", "command:true"], "the org-wide install's");
    assert_eq!(to_team, ["EvTeam", "command:false"], "what says it is for the team's install");
    assert!(tenants_of(&org_agent).iter().all(|(_, t)| *t == org.to_string()));
    assert!(tenants_of(&app.agent).iter().all(|(_, t)| *t == team.to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_into_a_team_of_an_enterprise_another_tenant_holds_org_wide_is_refused_and_the_reverse() {
    let slack = FakeSlack::start("localhost", Workspace::team_in("T7", "E1", "Grid team"));
    let flags = slack_flags(&slack, "https://doorman.example");
    let app = TestApp::spawn_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let op = app.db.operator();
    let org = op.create_tenant("Org").await;
    ok(&link(&app, org, &["--enterprise-id", "E1"]));
    let (_team, team_link) = customer(&app, "Team").await;

    let (status, page) = install(&app, &team_link).await;
    assert_eq!(status, 409, "{page}");
    assert!(op.installations().await.is_empty(), "nothing was stored");

    // The other way round: a team linked as inside E3, then an org-wide install of E3.
    let holder = op.create_tenant("Holder").await;
    ok(&link(&app, holder, &["--team-id", "T8", "--enterprise-id", "E3"]));
    slack.grant(Workspace::org_wide("E3", "Grid three"));
    let (_org3, org_link) = customer(&app, "Org three").await;
    let (status, page) = install(&app, &org_link).await;
    assert_eq!(status, 409, "{page}");
    assert!(op.installations().await.is_empty());
}

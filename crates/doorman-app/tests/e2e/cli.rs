//! Operator commands through the binary, as an operator types them.

use doorman_testkit::database::TestDatabase;

use doorman_testkit::fake_slack::{self, FakeSlack, Workspace};

use crate::helpers::{AGENT_SECRET, TestApp, WAIT, doorman, doorman_with, ok};
use crate::install::{install, slack_flags};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_provisions_a_tenant_that_then_receives_events() {
    let app = TestApp::spawn().await;
    let url = app.db.url();

    let tenant = ok(&doorman(url, &["tenant", "add", "--name", "Acme"])).trim().to_owned();
    assert!(tenant.parse::<uuid::Uuid>().is_ok(), "the id alone on stdout: {tenant:?}");
    let linked = ok(&doorman(url, &["workspace", "link", "--tenant", &tenant, "--team-id", "TACME"]));
    assert!(linked.contains("TACME"), "{linked}");
    let set = ok(&doorman(
        url,
        &["agent", "set", "--tenant", &tenant, "--url", app.agent.url(), "--secret", AGENT_SECRET],
    ));
    assert!(!set.contains(AGENT_SECRET), "the secret is never echoed: {set}");

    assert_eq!(app.event("TACME", "EvAcme", None).await.status(), 200);
    app.agent.wait_until("the dispatch", WAIT, |a| a.count_for("EvAcme") == 1).await;

    ok(&doorman(url, &["agent", "pause", "--tenant", &tenant]));
    app.until_answered("TACME", 503).await;
    ok(&doorman(url, &["agent", "resume", "--tenant", &tenant]));
    app.until_answered("TACME", 200).await;
}

#[tokio::test]
async fn bad_operator_input_gets_a_clear_error_and_a_nonzero_exit() {
    let db = TestDatabase::create().await;
    let url = db.url();
    let cases: [(&[&str], &str); 5] = [
        (&["workspace", "link", "--tenant", "nope", "--team-id", "T1"], "--tenant"),
        (&["workspace", "link", "--tenant", "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11"], "--team-id"),
        (&["agent", "pause", "--tenant", "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11"], "no tenant"),
        (
            &[
                "agent",
                "set",
                "--tenant",
                "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11",
                "--url",
                "http://a",
                "--secret",
                "plain",
            ],
            "whsec_",
        ),
        (&["receipts", "prune", "--retention", "1m"], "10 minutes"),
    ];
    for (args, expected) in cases {
        let output = doorman(url, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_commands_list_stranded_and_failed_and_prune() {
    let app = TestApp::spawn().await;
    app.tenant("T1").await;
    app.agent.answer_with(500);
    app.event("T1", "EvFailed", None).await;
    app.wait_for_receipts("the failure", |rows| rows.iter().any(|r| r.failure.is_some())).await;
    let url = app.db.url();

    let failed: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["receipts", "failed", "--json"]))).unwrap();
    assert_eq!(failed[0]["external_event_id"], "EvFailed");
    assert_eq!(failed[0]["failure"]["reason"], "agent answered HTTP 500");
    let human = ok(&doorman(url, &["receipts", "failed"]));
    assert!(human.contains("1 failed receipts") && human.contains("EvFailed"), "{human}");

    let stranded: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["receipts", "stranded", "--older-than", "0s", "--json"])))
            .unwrap();
    assert_eq!(stranded, serde_json::json!([]), "a failure is not stranded");

    let pruned: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["receipts", "prune", "--json"]))).unwrap();
    assert_eq!(pruned["deleted"], 0, "nothing is past the 7-day default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_hands_out_an_install_link_then_lists_and_removes_the_installation() {
    let slack = FakeSlack::start("localhost", Workspace::team("TCLI", "Cli Co"));
    let flags = slack_flags(&slack, "https://doorman.example");
    let app = TestApp::spawn_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let url = app.db.url();
    let tenant = ok(&doorman(url, &["tenant", "add", "--name", "Acme"])).trim().to_owned();

    let off = doorman(url, &["slack", "install-link", "--tenant", &tenant]);
    assert!(!off.status.success());
    assert!(String::from_utf8_lossy(&off.stderr).contains("SLACK_CLIENT_ID"), "says why");

    let slack_app = [
        ("SLACK_CLIENT_ID", fake_slack::CLIENT_ID),
        ("SLACK_CLIENT_SECRET", fake_slack::CLIENT_SECRET),
        ("DOORMAN_PUBLIC_URL", "https://doorman.example/"),
    ];
    let link = ok(&doorman_with(
        url,
        &slack_app,
        &["slack", "install-link", "--tenant", &tenant, "--expires-in", "1h"],
    ));
    let link = link.trim();
    let token = link
        .strip_prefix("https://doorman.example/slack/install/")
        .unwrap_or_else(|| panic!("one URL: {link:?}"));
    assert_eq!(install(&app, token).await.0, 200);

    let listed = ok(&doorman(url, &["slack", "installations", "--json"]));
    let human = ok(&doorman(url, &["slack", "installations", "--tenant", &tenant]));
    for out in [&listed, &human] {
        assert!(!out.contains("xoxb") && !out.contains("xoxe"), "never a token: {out}");
    }
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["tenant_id"], tenant.as_str());
    assert_eq!(listed[0]["team_id"], "TCLI");
    assert_eq!(listed[0]["has_bot_token"], true);
    assert!(human.contains("TCLI") && human.contains("present"), "{human}");

    ok(&doorman(url, &["slack", "uninstall", "--tenant", &tenant, "--team-id", "TCLI"]));
    assert_eq!(ok(&doorman(url, &["slack", "installations"])).trim(), "no installations");
    let again = doorman(url, &["slack", "uninstall", "--tenant", &tenant, "--team-id", "TCLI"]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("no installation"));
}

/// Every action the audit trail knows, done once through the command line, and each read back
/// with its tenant and target: an action whose audit write is removed fails here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_audited_action_is_read_back_from_the_trail() {
    let slack = FakeSlack::start("localhost", Workspace::team("TAUD", "Audit Co"));
    let flags = slack_flags(&slack, "https://doorman.example");
    let app = TestApp::spawn_with(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let url = app.db.url();
    let slack_app = [
        ("SLACK_CLIENT_ID", fake_slack::CLIENT_ID),
        ("SLACK_CLIENT_SECRET", fake_slack::CLIENT_SECRET),
        ("DOORMAN_PUBLIC_URL", "https://doorman.example/"),
    ];
    let tenant = ok(&doorman(url, &["tenant", "add", "--name", "Audited"])).trim().to_owned();
    let t = tenant.as_str();
    ok(&doorman(url, &["tenant", "retain-payloads", "--tenant", t, "on"]));
    // Redelivery: a refused schedule, or one with off, names --schedule and changes nothing.
    for (setting, schedule, said) in [("on", "5x", "must be delays like"), ("off", "5s", "on only")] {
        let refused = doorman(url, &["tenant", "redelivery", "--tenant", t, setting, "--schedule", schedule]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            !refused.status.success() && stderr.contains("--schedule") && stderr.contains(said),
            "{stderr}"
        );
    }
    ok(&doorman(url, &["tenant", "redelivery", "--tenant", t, "on", "--schedule", "5s,5m"]));
    let listed = ok(&doorman(url, &["tenant", "list"]));
    assert!(listed.contains("REDELIVERY") && listed.contains("5s,5m "), "{listed}");
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["tenant", "list", "--json"]))).unwrap();
    assert_eq!(
        listed["items"][0]["redelivery"],
        serde_json::json!({"schedule": "5s,5m", "seconds": [5, 300]})
    );
    ok(&doorman(url, &["tenant", "read-only-portals-read-payloads", "--tenant", t, "on"]));
    let listed = ok(&doorman(url, &["tenant", "list"]));
    assert!(listed.contains("READ-ONLY PORTALS") && listed.contains(" read payloads "), "{listed}");
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["tenant", "list", "--json"]))).unwrap();
    assert_eq!(listed["items"][0]["read_only_portals_read_payloads"], true);
    ok(&doorman(url, &["tenant", "rename", "--tenant", t, "--name", "Audited Co"]));
    ok(&doorman(url, &["workspace", "link", "--tenant", t, "--team-id", "TLINK"]));
    ok(&doorman(url, &["agent", "set", "--tenant", t, "--url", app.agent.url(), "--secret", AGENT_SECRET]));
    ok(&doorman(url, &["agent", "pause", "--tenant", t]));
    ok(&doorman(url, &["agent", "resume", "--tenant", t]));
    ok(&doorman(url, &["agent", "remove", "--tenant", t]));
    ok(&doorman(url, &["agent", "set", "--tenant", t, "--url", app.agent.url(), "--secret", AGENT_SECRET]));
    let link = ok(&doorman_with(url, &slack_app, &["slack", "install-link", "--tenant", t]));
    let token = link.trim().strip_prefix("https://doorman.example/slack/install/").expect("an install link");
    assert_eq!(install(&app, token).await.0, 200);
    ok(&doorman(url, &["slack", "uninstall", "--tenant", t, "--team-id", "TAUD"]));
    ok(&doorman(url, &["workspace", "unlink", "--tenant", t, "--id", "TLINK"]));
    // A replay of an event with no receipt: its job is audited, and so is the event's outcome.
    let _ = doorman(url, &["receipts", "replay", "--tenant", t, "--event-id", "EvAudited"]);
    let key: serde_json::Value = serde_json::from_str(&ok(&doorman(
        url,
        &["admin", "keys", "create", "--name", "audited key", "--json"],
    )))
    .unwrap();
    let key_id = key["id"].as_str().expect("the key's id").to_owned();
    ok(&doorman(url, &["admin", "keys", "revoke", &key_id]));
    // A customer's console sign-in link, for a key scoped to the tenant: printed once, whole
    // with --console-url.
    let portal: serde_json::Value = serde_json::from_str(&ok(&doorman(
        url,
        &["admin", "keys", "create", "--name", "portal", "--tenant", t, "--read-only", "--json"],
    )))
    .unwrap();
    let portal_id = portal["id"].as_str().expect("the key's id").to_owned();
    // Without the console's address no link is made (a path alone is no link to paste), and
    // the refusal says what to set.
    let pathless = doorman(url, &["admin", "keys", "sign-in-link", &portal_id]);
    let said = String::from_utf8_lossy(&pathless.stderr);
    assert!(!pathless.status.success() && pathless.stdout.is_empty(), "{said}");
    assert!(said.contains("--console-url") && said.contains("DOORMAN_CONSOLE_URL"), "{said}");
    let link = ok(&doorman(
        url,
        &["admin", "keys", "sign-in-link", &portal_id, "--console-url", "https://admin.example/"],
    ));
    assert!(link.trim().starts_with("https://admin.example/console/sign-in/"), "{link}");
    let every = doorman(url, &["admin", "keys", "sign-in-link", &key_id]);
    assert!(!every.status.success(), "no link for a revoked key (nor one for every tenant)");
    ok(&doorman(url, &["secrets", "rotate"]));
    ok(&doorman(url, &["receipts", "prune"]));
    ok(&doorman(url, &["slack", "prune-states"]));
    ok(&doorman(url, &["admin", "prune-sessions"]));
    let refused = doorman(url, &["tenant", "delete", "--tenant", t]);
    assert!(
        !refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("--yes"),
        "a deletion asks for --yes"
    );
    ok(&doorman(url, &["tenant", "delete", "--tenant", t, "--yes"]));

    let trail: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["admin", "audit", "--json"]))).unwrap();
    let entries = trail.as_array().expect("a list of entries");
    let entry = |action: &str| {
        entries
            .iter()
            .find(|e| e["action"] == action)
            .unwrap_or_else(|| panic!("no {action} entry in the trail: {trail}"))
    };
    // Every action an operator takes (an agent disabled is Doorman's own: tests/e2e/agent_disable.rs).
    for action in doorman_domain::AuditAction::ALL
        .into_iter()
        .filter(|a| *a != doorman_domain::AuditAction::AgentDisable)
    {
        let found = entry(action.as_str());
        assert_eq!(found["actor_kind"], "cli", "{found}");
    }
    for (action, target) in [
        ("events.replay", "event EvAudited (1 event)"),
        ("event.replay", "EvAudited: unknown"),
        ("tenant.retain_payloads", "on"),
        ("tenant.redelivery", "5s,5m"),
        ("tenant.read_only_portals_read_payloads", "on"),
        ("tenant.rename", "Audited -> Audited Co"),
        ("tenant.delete", "Audited Co"),
        ("workspace.link", "TLINK"),
        ("workspace.unlink", "TLINK"),
        ("installation.remove", "TAUD"),
    ] {
        assert_eq!(entry(action)["tenant_id"], t, "{action}");
        assert!(
            entry(action)["target"].as_str().is_some_and(|x| x.contains(target)),
            "{action}: {}",
            entry(action)
        );
    }
    for action in [
        "tenant.create",
        "agent.set",
        "agent.pause",
        "agent.resume",
        "agent.remove",
        "install_link.create",
        "events.replay",
    ] {
        assert_eq!(entry(action)["tenant_id"], t, "{action}: {}", entry(action));
    }
    assert_eq!(entry("sign_in_link.create")["target"], portal_id.as_str());
    assert_eq!(entry("sign_in_link.create")["tenant_id"], t);
    assert!(
        entry("key.revoke")["target"].as_str().is_some_and(|x| x.contains(&key_id)),
        "{}",
        entry("key.revoke")
    );
    assert!(!trail.to_string().contains("whsec_") && !trail.to_string().contains("dmk_"), "never a secret");
    assert!(
        !trail.to_string().contains(link.trim().rsplit('/').next().unwrap()),
        "never a sign-in link's token"
    );
}

/// `receipts find`: an event's id in every tenant, without its tenant; exit 1 when none has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_find_lists_every_tenants_event_of_an_id_and_exits_1_when_none_has_it() {
    use diesel_async::RunQueryDsl;

    let db = TestDatabase::create().await;
    let url = db.url();
    let acme = ok(&doorman(url, &["tenant", "add", "--name", "Acme"])).trim().to_owned();
    let globex = ok(&doorman(url, &["tenant", "add", "--name", "Globex"])).trim().to_owned();
    for tenant in [&acme, &globex] {
        diesel::sql_query(format!(
            "INSERT INTO messaging_event_receipts (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at) \
             VALUES ('{tenant}', 'slack', 'Ev0123ABCD', 'app_mention', 0, now())"
        ))
        .execute(&mut db.owner().await)
        .await
        .unwrap();
    }
    let found: serde_json::Value =
        serde_json::from_str(&ok(&doorman(url, &["receipts", "find", "--event-id", "Ev0123ABCD", "--json"])))
            .unwrap();
    let tenants: Vec<_> =
        found["items"].as_array().unwrap().iter().map(|i| i["tenant_name"].clone()).collect();
    assert_eq!(tenants, ["Acme", "Globex"], "{found}");
    assert_eq!(found["items"][0]["tenant_id"], acme.as_str());
    assert_eq!(found["items"][1]["status"], "in_flight");
    let human = ok(&doorman(url, &["receipts", "find", "--event-id", "Ev0123ABCD"]));
    assert!(human.contains(&acme) && human.contains(&globex) && human.contains("in_flight"), "{human}");
    let none = doorman(url, &["receipts", "find", "--event-id", "Ev0123ABC"]);
    assert_eq!(none.status.code(), Some(1), "{none:?}");
    assert!(String::from_utf8_lossy(&none.stdout).contains("no tenant has it"), "{none:?}");
}

/// `doorman admin audit` narrows the trail as the API's query does: `--action`, `--key`,
/// `--since` (at or after) and `--until` (before); a value the API would refuse is refused
/// here, naming its flag, with a non-zero exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_audit_narrows_by_action_key_and_time_and_refuses_bad_values() {
    let db = TestDatabase::create().await;
    let url = db.url();
    let admin = crate::admin_api::Admin::start(&db, &[]).await;
    let root = crate::admin_api::key(&db, None, false).await;
    let root_id = uuid::Uuid::parse_str(root.split('_').nth(1).unwrap()).unwrap().to_string();
    let keyed = admin.tenant(&root, "Keyed").await;
    ok(&doorman(url, &["tenant", "add", "--name", "Typed"]));
    let trail = |flags: &[&str]| -> Vec<serde_json::Value> {
        let args = [&["admin", "audit", "--json"], flags].concat();
        let read: serde_json::Value = serde_json::from_str(&ok(&doorman(url, &args))).unwrap();
        read.as_array().expect("a list of entries").clone()
    };
    let all = trail(&[]);
    assert_eq!(all.len(), 3, "key.create, then tenant.create twice: {all:?}");

    let created = trail(&["--action", "tenant.create"]);
    assert_eq!(created.len(), 2, "{created:?}");
    assert!(created.iter().all(|e| e["action"] == "tenant.create"), "{created:?}");
    let by_key = trail(&["--key", &root_id]);
    assert_eq!(by_key.len(), 1, "{by_key:?}");
    assert_eq!(
        (&by_key[0]["actor_id"], &by_key[0]["tenant_id"]),
        (&serde_json::json!(root_id), &serde_json::json!(keyed))
    );
    assert_eq!(trail(&["--action", "key.create", "--key", &root_id]), Vec::<serde_json::Value>::new());
    let human = ok(&doorman(url, &["admin", "audit", "--action", "key.create"]));
    assert!(human.contains("key.create") && !human.contains("tenant.create"), "{human}");

    // At or after the newest entry's instant: it (and only what shares it); before it: the rest.
    let newest = all[0]["at"].as_str().unwrap();
    let since = trail(&["--since", newest]);
    let until = trail(&["--until", newest]);
    assert!(since.iter().any(|e| e["id"] == all[0]["id"]), "{since:?}");
    assert!(!until.iter().any(|e| e["id"] == all[0]["id"]), "{until:?}");
    assert_eq!(since.len() + until.len(), all.len());
    assert_eq!(trail(&["--since", newest, "--until", newest]), Vec::<serde_json::Value>::new());

    for (flags, said) in [
        (&["--action", "tenant.created"][..], "--action \"tenant.created\": must be one of tenant.create"),
        (&["--key", "nope"], "--key \"nope\": must be a key's id"),
        (&["--since", "yesterday"], "--since \"yesterday\": must be an RFC 3339 date and time"),
        (&["--until", "2026-12-01 10:00"], "--until"),
        (
            &["--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z"],
            "--until must not be before --since",
        ),
    ] {
        let refused = doorman(url, &[&["admin", "audit"], flags].concat());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success() && refused.stdout.is_empty(), "{flags:?}: {stderr}");
        assert!(stderr.contains(said) && !stderr.contains("panicked"), "{flags:?}: {stderr}");
    }
}

/// `receipts show` prints the request Doorman sends the event's agent (the agent as it is set
/// now, each header, the signature redacted) and the kept payload only with `--payload` (the
/// command line runs as the owner, who may read any: it prints one when asked, never by
/// default), Slack's verification token redacted; `--payload` without the encryption keys is
/// refused, saying so, printing nothing of the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_show_prints_the_request_sent_and_the_kept_payload_only_when_asked() {
    let app = TestApp::spawn().await;
    let url = app.db.url();
    let tenant = app.tenant("T1").await.to_string();
    ok(&doorman(url, &["tenant", "retain-payloads", "--tenant", &tenant, "on"]));
    app.agent.answer_with(500);
    assert_eq!(app.event("T1", "EvShown", None).await.status(), 200);
    app.wait_for_receipts("the failure", |rows| rows.iter().any(|r| r.failure.is_some())).await;
    let show = |flags: &[&str]| {
        let args = [&["receipts", "show", "--tenant", &tenant, "--event-id", "EvShown"], flags].concat();
        doorman(url, &args)
    };
    let signatures: Vec<String> = app
        .agent
        .arrivals()
        .iter()
        .map(|a| a.webhook_signature.trim_start_matches("v1,").to_owned())
        .collect();
    assert!(!signatures.is_empty());
    let no_secret = |printed: &str| {
        for secret in signatures.iter().map(String::as_str).chain([AGENT_SECRET, "XXYYZZ"]) {
            assert!(!printed.contains(secret), "a secret was printed: {printed}");
        }
    };

    let plain = ok(&show(&[]));
    let host = app.agent.url().trim_start_matches("http://").split('/').next().unwrap().to_owned();
    for line in [
        format!("  POST {}", app.agent.url()),
        format!("  host: {host}"),
        "  content-type: application/json".to_owned(),
        "  webhook-id: evt_EvShown".to_owned(),
        "  webhook-signature: v1,… (redacted)".to_owned(),
        "payload: kept; --payload prints it".to_owned(),
    ] {
        assert!(plain.lines().any(|l| l == line), "{line:?} in {plain}");
    }
    assert!(!plain.contains("hello"), "no payload unless asked: {plain}");
    no_secret(&plain);

    let asked = ok(&show(&["--payload"]));
    assert!(asked.contains("payload (as Slack sent it, its verification token redacted):"), "{asked}");
    assert!(asked.contains(r#""text": "<@U0LAN0Z89> hello""#), "indented: {asked}");
    assert!(asked.contains(r#""token": "… (redacted)""#), "{asked}");
    assert!(asked.contains("  webhook-id: evt_EvShown"), "the request too: {asked}");
    no_secret(&asked);

    let json = |printed: &str| serde_json::from_str::<serde_json::Value>(printed).unwrap();
    let plain = json(&ok(&show(&["--json"])));
    assert_eq!(
        (plain["status"].as_str(), plain["request"]["method"].as_str()),
        (Some("failed"), Some("POST"))
    );
    assert_eq!(plain["request"]["headers"][4]["value"], "evt_EvShown", "{plain}");
    assert!(plain.get("payload").is_none() && plain.get("payload_hidden").is_none(), "not read: {plain}");
    let asked = json(&ok(&show(&["--json", "--payload"])));
    let payload = json(asked["payload"].as_str().unwrap_or_else(|| panic!("a payload in {asked}")));
    assert_eq!(
        (payload["event_id"].as_str(), payload["token"].as_str()),
        (Some("EvShown"), Some("… (redacted)"))
    );
    no_secret(&asked.to_string());

    // Without the keys to open it: refused, nothing printed.
    let keyless = crate::helpers::doorman_bare(
        url,
        &[],
        &["receipts", "show", "--tenant", &tenant, "--event-id", "EvShown", "--payload"],
    );
    let said = String::from_utf8_lossy(&keyless.stderr);
    assert!(!keyless.status.success() && keyless.stdout.is_empty(), "{said}");
    assert!(said.contains("DOORMAN_ENCRYPTION_KEYS") && !said.contains("panicked"), "{said}");

    // A handled event keeps none; asked for, it says so.
    app.agent.answer_with(200);
    assert_eq!(app.event("T1", "EvDone", None).await.status(), 200);
    app.wait_for_receipts("the completion", |rows| rows.iter().any(|r| r.handled_at.is_some())).await;
    let done =
        ok(&doorman(url, &["receipts", "show", "--tenant", &tenant, "--event-id", "EvDone", "--payload"]));
    assert!(done.contains("payload: none kept"), "{done}");
}

/// `doorman admin keys create --read-payloads` makes a key that reads the kept payload in an
/// event's document over the admin API; one made without it reads the same document, its
/// payload withheld (`not_allowed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_created_with_read_payloads_reads_payloads_over_the_api_and_one_without_does_not() {
    let app = TestApp::spawn().await;
    let url = app.db.url();
    let tenant = app.tenant("T1").await.to_string();
    ok(&doorman(url, &["tenant", "retain-payloads", "--tenant", &tenant, "on"]));
    let admin = crate::admin_api::Admin::start_allowing_private(&app.db).await;
    let made = |flags: &[&str]| {
        let printed =
            ok(&doorman(url, &[&["admin", "keys", "create", "--read-only", "--json"], flags].concat()));
        let printed: serde_json::Value = serde_json::from_str(&printed).unwrap();
        (printed["read_payloads"].as_bool(), printed["key"].as_str().unwrap().to_owned())
    };
    let (reads, reader) = made(&["--name", "support", "--read-payloads"]);
    let (plain_reads, plain) = made(&["--name", "backend"]);
    assert_eq!((reads, plain_reads), (Some(true), Some(false)));

    app.agent.answer_with(500);
    assert_eq!(app.event("T1", "EvKept", None).await.status(), 200);
    app.wait_for_receipts("the failure", |rows| rows.iter().any(|r| r.failure.is_some())).await;
    let path = format!("/admin/v1/tenants/{tenant}/events/EvKept");
    let shown = admin.get(&path, &reader).await;
    assert_eq!((shown.status.as_u16(), shown.body["payload_hidden"].clone()), (200, serde_json::Value::Null));
    let payload: serde_json::Value = serde_json::from_str(shown.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["event"]["text"], "<@U0LAN0Z89> hello");
    let withheld = admin.get(&path, &plain).await;
    assert_eq!(withheld.status, 200, "{withheld:?}");
    assert_eq!(
        (&withheld.body["payload"], withheld.body["payload_hidden"].as_str()),
        (&serde_json::Value::Null, Some("not_allowed"))
    );
    assert!(!withheld.body.to_string().contains("hello"), "nothing of the message: {withheld:?}");
}

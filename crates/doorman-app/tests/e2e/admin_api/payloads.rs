//! Keys that read payloads, over HTTP and the command line: made with `read_payloads` (off
//! unless asked for), listed with it, audited as such, and refused for a read-only portal.

use doorman_testkit::database::TestDatabase;
use serde_json::{Value, json};

use super::{Admin, key};
use crate::helpers::{doorman, ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_made_to_read_payloads_says_so_in_its_document_and_the_audit_trail() {
    let db = TestDatabase::create().await;
    let admin = Admin::start(&db, &[]).await;
    let root = key(&db, None, false).await;
    let made = admin.post("/admin/v1/keys", &root, json!({"name": "support", "read_payloads": true})).await;
    assert_eq!((made.status.as_u16(), made.body["read_payloads"].clone()), (201, json!(true)), "{made:?}");
    let id = made.body["id"].as_str().unwrap().to_owned();
    let plain = admin.post("/admin/v1/keys", &root, json!({"name": "backend"})).await;
    assert_eq!(plain.body["read_payloads"], false, "off unless asked for: {plain:?}");
    let listed = admin.get("/admin/v1/keys", &root).await.body;
    let reads: Vec<(String, bool)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap().to_owned(), k["read_payloads"].as_bool().unwrap()))
        .collect();
    assert!(
        reads.contains(&("support".into(), true)) && reads.contains(&("backend".into(), false)),
        "{reads:?}"
    );

    let trail = admin.get("/admin/v1/audit?action=key.create", &root).await.body;
    let targets: Vec<&str> =
        trail["items"].as_array().unwrap().iter().map(|e| e["target"].as_str().unwrap()).collect();
    assert!(targets.contains(&format!("{id} support (reads payloads)").as_str()), "{targets:?}");
    assert!(targets.iter().any(|t| t.ends_with(" backend")), "{targets:?}");

    // The command line makes the same key with `--read-payloads`, and refuses the same one.
    let printed =
        ok(&doorman(db.url(), &["admin", "keys", "create", "--name", "cli", "--read-payloads", "--json"]));
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!((printed["read_payloads"].clone(), printed["read_only"].clone()), (json!(true), json!(false)));
    let tenant = admin.tenant(&root, "Acme").await;
    let refused = doorman(
        db.url(),
        &["admin", "keys", "create", "--name", "x", "--tenant", &tenant, "--read-only", "--read-payloads"],
    );
    assert!(!refused.status.success(), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("read_payloads") && said.contains("never reads payloads"), "{said}");
    let listed = ok(&doorman(db.url(), &["admin", "keys", "list"]));
    assert!(listed.lines().any(|l| l.contains("read-write+payloads") && l.ends_with(" cli")), "{listed}");
}

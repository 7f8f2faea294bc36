//! Kept payloads and replays on real PostgreSQL, as the server's role: kept with the claim
//! and sealed, gone once handled or pruned, held by one replay at a time, counted, and
//! counted across tenants for the gauges.

use std::sync::Arc;

use chrono::{Duration, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::PgStoredEvents;
use doorman_adapters::postgres::receipts::receipt_counts;
use doorman_adapters::postgres::schema::messaging_event_payloads as payloads;
use doorman_domain::ports::{Ledger, OperatorPorts, ReceiptStore, StoredEvents};
use doorman_domain::{
    EventFilter, EventState, ExternalEventId, Label, NewReceipt, Payload, ReplaySelection, ReplayTake,
    TenantId,
};
use doorman_testkit::database::{TestDatabase, receipt_store, test_keys};

use crate::fixtures::{days_ago, delivered, failed, key, now, receipt, tenant_with_team};

/// An Events API body for `event_id` from team T1, as Slack sends it.
fn body(event_id: &str) -> String {
    serde_json::json!({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
        "event_time": 1_700_000_000, "event": {"type": "app_mention", "text": "keep me", "user": "U1"},
        "authorizations": [{"team_id": "T1", "enterprise_id": null, "is_enterprise_install": false}]
    })
    .to_string()
}

fn kept(tenant: TenantId, event_id: &str) -> NewReceipt {
    NewReceipt { retained: Some(Payload::from_json_text(body(event_id))), ..receipt(tenant, event_id, now()) }
}

async fn kept_rows(db: &TestDatabase) -> Vec<(String, String)> {
    payloads::table
        .select((payloads::external_event_id, payloads::payload))
        .order(payloads::external_event_id)
        .load(&mut db.owner().await)
        .await
        .unwrap()
}

/// As the admin process reads them (the command line reads them as the owner).
fn stored(db: &TestDatabase) -> PgStoredEvents {
    PgStoredEvents::new(db.admin_pool(), Arc::new(test_keys()))
}

fn id(event_id: &str) -> ExternalEventId {
    ExternalEventId::new(event_id).unwrap()
}

#[tokio::test]
async fn a_payload_is_kept_sealed_with_its_claim_and_goes_when_handled_or_pruned() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&kept(tenant, "EvKept")).await.unwrap();
    store.claim(&kept(tenant, "EvKept")).await.unwrap(); // a duplicate keeps nothing more
    store.claim(&receipt(tenant, "EvNotKept", now())).await.unwrap();
    store.claim(&NewReceipt { claimed_at: days_ago(30), ..kept(tenant, "EvOld") }).await.unwrap();

    let rows = kept_rows(&db).await;
    assert_eq!(rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ["EvKept", "EvOld"]);
    assert!(rows.iter().all(|(_, sealed)| sealed.starts_with("v1:test:") && !sealed.contains("keep me")));

    let failure = failed("agent answered HTTP 500", now());
    store.record_failure(&key(tenant, "EvKept"), &failure).await.unwrap();
    assert_eq!(kept_rows(&db).await.len(), 2, "a failure keeps it for a replay");

    // Completing EvKept deletes its payload; the same completion prunes EvOld's receipt and payload.
    store.complete(&key(tenant, "EvKept"), &delivered(now()), days_ago(7), 100).await.unwrap();
    assert_eq!(kept_rows(&db).await, vec![], "handled: gone; expired: pruned");
}

#[tokio::test]
async fn a_replay_takes_the_event_once_counts_it_and_a_failure_or_release_ends_the_hold() {
    let db = TestDatabase::create().await;
    let tenant = tenant_with_team(&db.operator(), "T1").await;
    let store = receipt_store(db.pool());
    store.claim(&kept(tenant, "EvR")).await.unwrap();
    let stored = stored(&db);
    let hold = Utc::now() + Duration::minutes(2);

    let ReplayTake::Event { event, .. } = stored.take(&key(tenant, "EvR"), hold).await.unwrap() else {
        panic!("the kept event")
    };
    assert!(event.delivery.replay, "marked as a replay");
    assert_eq!(event.external_id, Some(id("EvR")));
    assert!(event.payload.as_json_text().contains("keep me"), "the body as received");
    assert_eq!(stored.take(&key(tenant, "EvR"), hold).await.unwrap(), ReplayTake::InProgress);

    let failure = failed("agent answered HTTP 500", now());
    store.record_failure(&key(tenant, "EvR"), &failure).await.unwrap();
    assert!(
        matches!(stored.take(&key(tenant, "EvR"), hold).await.unwrap(), ReplayTake::Event { .. }),
        "released"
    );
    stored.release(&key(tenant, "EvR")).await.unwrap();
    let shown = db
        .operator()
        .use_cases()
        .ports()
        .ledger()
        .receipt(&key(tenant, "EvR"))
        .await
        .unwrap()
        .unwrap()
        .receipt;
    assert_eq!(shown.replays, 1, "two takes, one released");

    store.complete(&key(tenant, "EvR"), &delivered(now()), days_ago(7), 100).await.unwrap();
    assert_eq!(stored.take(&key(tenant, "EvR"), hold).await.unwrap(), ReplayTake::Handled);
    store.claim(&receipt(tenant, "EvBare", now())).await.unwrap();
    assert_eq!(stored.take(&key(tenant, "EvBare"), hold).await.unwrap(), ReplayTake::NoPayload);
    assert_eq!(stored.take(&key(tenant, "EvNever"), hold).await.unwrap(), ReplayTake::Unknown);
}

#[tokio::test]
async fn selections_name_only_the_tenants_own_receipts_and_say_which_have_a_payload() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "T1").await, tenant_with_team(&op, "T2").await);
    let store = receipt_store(db.pool());
    let failure = failed("agent answered HTTP 500", now());
    for (tenant, event) in [(a, "EvA1"), (a, "EvA2"), (b, "EvB1")] {
        store.claim(&kept(tenant, event)).await.unwrap();
        store.record_failure(&key(tenant, event), &failure).await.unwrap();
    }
    store
        .claim(&NewReceipt { claimed_at: Utc::now() - Duration::hours(1), ..receipt(a, "EvStranded", now()) })
        .await
        .unwrap();
    let stored = stored(&db);

    let failed = stored.select(a, &ReplaySelection::FailedSince(now() - Duration::minutes(5))).await.unwrap();
    let names: Vec<_> = failed.iter().map(|c| (c.receipt.key.external_id.as_str(), c.payload_kept)).collect();
    assert_eq!(names, [("EvA1", true), ("EvA2", true)], "never tenant B's");
    let stranded =
        stored.select(a, &ReplaySelection::StrandedBefore(Utc::now() - Duration::minutes(10))).await.unwrap();
    assert_eq!(stranded.len(), 1);
    assert!(!stranded[0].payload_kept);
    assert_eq!(stored.select(b, &ReplaySelection::Event(id("EvA1"))).await.unwrap(), vec![]);
    assert_eq!(
        stored.take(&key(b, "EvA1"), Utc::now()).await.unwrap(),
        ReplayTake::Unknown,
        "not across tenants"
    );
}

#[tokio::test]
async fn a_bulk_retry_selects_the_chosen_ids_or_what_the_lists_filter_shows_of_the_tenant_alone() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "T1").await, tenant_with_team(&op, "T2").await);
    let store = receipt_store(db.pool());
    let failure = failed("agent answered HTTP 500", now());
    let message = Label::new("event type", "message").unwrap();
    for (tenant, event, kind) in
        [(a, "EvA1", None), (a, "EvA2", Some(message)), (a, "EvA3", None), (b, "EvB1", None)]
    {
        let receipt = kept(tenant, event);
        let receipt = NewReceipt { event_type: kind.unwrap_or(receipt.event_type.clone()), ..receipt };
        store.claim(&receipt).await.unwrap();
        store.record_failure(&key(tenant, event), &failure).await.unwrap();
    }
    store.claim(&kept(a, "EvOk")).await.unwrap();
    store.complete(&key(a, "EvOk"), &delivered(now()), days_ago(7), 100).await.unwrap();
    let stored = stored(&db);
    let names = |found: Vec<doorman_domain::ReceiptRecord>| -> Vec<String> {
        found.into_iter().map(|c| c.receipt.key.external_id.as_str().to_owned()).collect()
    };

    // Chosen: by id, whatever their state (a replay refuses a handled one by name), the
    // tenant's own only.
    let chosen = ReplaySelection::chosen(vec![id("EvOk"), id("EvA1"), id("EvB1")]).unwrap();
    assert_eq!(
        names(stored.select(a, &chosen).await.unwrap()),
        ["EvA1", "EvOk"],
        "in claim order, never B's"
    );

    // A filter: what the failed list shows with it, the first `limit`.
    let filter = |event_type: Option<&str>, since| EventFilter {
        state: Some(EventState::Failed),
        since,
        until: None,
        event_type: event_type.map(str::to_owned),
        stranded_before: Utc::now() - Duration::minutes(10),
    };
    let matching = |filter, limit| ReplaySelection::matching(filter, limit).unwrap();
    let all = stored.select(a, &matching(filter(None, None), 1000)).await.unwrap();
    assert_eq!(names(all), ["EvA1", "EvA2", "EvA3"], "failed, not handled, not B's");
    let mentions = stored.select(a, &matching(filter(Some("app_mention"), None), 1000)).await.unwrap();
    assert_eq!(names(mentions), ["EvA1", "EvA3"], "by type");
    let first = stored.select(a, &matching(filter(Some("app_mention"), None), 1)).await.unwrap();
    assert_eq!(names(first), ["EvA1"], "within the limit");
    let later =
        stored.select(a, &matching(filter(None, Some(now() + Duration::minutes(1))), 1000)).await.unwrap();
    assert!(later.is_empty(), "since: the failure's time");
}

#[tokio::test]
async fn the_gauges_count_every_tenants_stranded_and_recently_failed_receipts() {
    let db = TestDatabase::create().await;
    let op = db.operator();
    let (a, b) = (tenant_with_team(&op, "T1").await, tenant_with_team(&op, "T2").await);
    let store = receipt_store(db.pool());
    let old = Utc::now() - Duration::hours(2);
    for (tenant, event) in [(a, "S1"), (b, "S2")] {
        store.claim(&receipt(tenant, event, old)).await.unwrap();
    }
    store.claim(&receipt(a, "InFlight", Utc::now())).await.unwrap();
    store.claim(&receipt(b, "F1", Utc::now())).await.unwrap();
    store.record_failure(&key(b, "F1"), &failed("x", Utc::now())).await.unwrap();
    store.claim(&receipt(b, "FOld", old)).await.unwrap();
    store.record_failure(&key(b, "FOld"), &failed("x", old)).await.unwrap();
    store.claim(&receipt(a, "Done", old)).await.unwrap();
    store.complete(&key(a, "Done"), &delivered(Utc::now()), days_ago(7), 10).await.unwrap();

    let counts =
        receipt_counts(&db.pool(), Utc::now() - Duration::minutes(10), Utc::now() - Duration::hours(1))
            .await
            .unwrap();
    assert_eq!((counts.stranded, counts.failed_recent), (2, 1));
}

/// The admin API's ledger opens a kept payload for the event's tenant only, with Slack's
/// verification token redacted; an event without one (never kept, or handled) has none; and
/// without the keys it is an error, never "not kept".
#[tokio::test]
async fn the_admins_ledger_opens_a_kept_payload_of_the_events_tenant_with_its_token_redacted() {
    let db = TestDatabase::create().await;
    let (a, b) = (tenant_with_team(&db.operator(), "T1").await, tenant_with_team(&db.operator(), "T2").await);
    let store = receipt_store(db.pool());
    // Slack puts the app's verification token first.
    let sent = format!(r#"{{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl",{}"#, &body("EvKept")[1..]);
    let with_token =
        NewReceipt { retained: Some(Payload::from_json_text(sent.clone())), ..receipt(a, "EvKept", now()) };
    store.claim(&with_token).await.unwrap();
    store.claim(&receipt(a, "EvBare", now())).await.unwrap();
    store.claim(&kept(b, "EvTheirs")).await.unwrap();

    let admin = crate::pg_admin::admin(&db);
    let ledger = admin.ports().ledger();
    let shown = ledger.payload(&key(a, "EvKept")).await.unwrap().expect("kept");
    assert!(!shown.expose().contains("Jhj5dZrVaK7ZwHHjRyZWjbDl"), "the token is redacted: {shown:?}");
    let redacted = sent.replace("Jhj5dZrVaK7ZwHHjRyZWjbDl", "… (redacted)");
    assert_eq!(shown.expose(), redacted, "the rest as Slack sent it, in its order");

    assert_eq!(ledger.payload(&key(a, "EvBare")).await.unwrap(), None, "not kept");
    assert_eq!(ledger.payload(&key(a, "EvTheirs")).await.unwrap(), None, "another tenant's: not a's");
    assert!(ledger.payload(&key(b, "EvTheirs")).await.unwrap().is_some());
    store.complete(&key(a, "EvKept"), &delivered(now()), days_ago(7), 100).await.unwrap();
    assert_eq!(ledger.payload(&key(a, "EvKept")).await.unwrap(), None, "handled: gone with it");

    // Without the keys (a pool with none), a kept payload is an error saying so.
    let keyless = doorman_adapters::postgres::PgLedger::new(db.admin_pool(), None);
    let error = keyless.payload(&key(b, "EvTheirs")).await.unwrap_err();
    assert!(error.to_string().contains("no encryption keys"), "{error}");
}

/// A read-only portal key made with `read_payloads`, as the admin API reads an event for it
/// (`doorman_admin`, the use case on the PostgreSQL ports): the payload only while its tenant
/// allows it, from the change on (nothing of the tenant is kept between requests), and never
/// another tenant's.
#[tokio::test]
async fn a_read_only_portal_reads_a_kept_payload_only_while_its_tenant_allows_it() {
    use doorman_domain::{Actor, ApiKey, Caller, KeyId, KeyScope, PayloadHidden, PayloadView, RequestId};
    let db = TestDatabase::create().await;
    let (a, b) = (tenant_with_team(&db.operator(), "T1").await, tenant_with_team(&db.operator(), "T2").await);
    let store = receipt_store(db.pool());
    store.claim(&kept(a, "EvKept")).await.unwrap();
    store.claim(&kept(b, "EvTheirs")).await.unwrap();
    let caller = |tenant, read_only, read_payloads| Caller {
        actor: Actor::Key(ApiKey {
            id: KeyId::generate(),
            name: "portal".into(),
            scope: KeyScope { tenant: Some(tenant), read_only, read_payloads },
        }),
        request: RequestId::new("req-test").unwrap(),
    };
    let (portal, support) = (caller(a, true, true), caller(a, false, false));
    let admin = crate::pg_admin::admin(&db);
    let shown = async |who: &Caller| admin.event_payload(who, a, id("EvKept")).await.unwrap();

    assert_eq!(shown(&portal).await, PayloadView::Hidden(PayloadHidden::NotAllowedByTenant));
    admin.set_read_only_portals_read_payloads(&support, a, true).await.unwrap();
    let PayloadView::Shown(payload) = shown(&portal).await else { panic!("shown once allowed") };
    assert!(payload.expose().contains("keep me"), "{payload:?}");
    assert_eq!(
        shown(&caller(a, true, false)).await,
        PayloadView::Hidden(PayloadHidden::NotAllowed),
        "a read-only portal not made with read_payloads: the key may not"
    );
    let theirs = admin.event_payload(&portal, b, id("EvTheirs")).await.unwrap_err();
    assert_eq!(theirs, doorman_domain::OperatorError::UnknownTenant(b), "another tenant's: never");
    admin.set_read_only_portals_read_payloads(&support, a, false).await.unwrap();
    assert_eq!(shown(&portal).await, PayloadView::Hidden(PayloadHidden::NotAllowedByTenant));
}

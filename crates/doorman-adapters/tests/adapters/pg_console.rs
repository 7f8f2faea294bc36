//! The operator console's sessions and sign-in links on a real database, as `doorman_admin`:
//! a session acts as its key until it ends, expires, or its key is revoked; a link signs in
//! once, before it expires; neither is stored in clear.

use chrono::{Duration, Utc};
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use doorman_adapters::postgres::PgConsoleSessions;
use doorman_adapters::postgres::admin::keys::Presented;
use doorman_adapters::postgres::pool::{self, ADMIN_ROLE, PoolSettings};
use doorman_domain::ports::{AdminKeys, OperatorPorts};
use doorman_domain::{AuditAction, AuditEntry, KeyId, KeyName, KeyRefusal, KeyScope, KeySecret, TenantId};
use doorman_testkit::database::TestDatabase;

struct Fixture {
    sessions: PgConsoleSessions,
    admin: doorman_domain::usecases::operator::Operator<doorman_adapters::postgres::PgOperatorPorts>,
    db: TestDatabase,
}

impl Fixture {
    async fn new() -> Self {
        let db = TestDatabase::create().await;
        let pool = pool::connect_as(&db.admin_url(), &PoolSettings::default(), Some(ADMIN_ROLE));
        Self { sessions: PgConsoleSessions::new(pool), admin: crate::pg_admin::admin(&db), db }
    }

    /// A key made as the command line makes one: its id.
    async fn key(&self, tenant: Option<TenantId>) -> KeyId {
        self.key_and_secret(tenant).await.0
    }

    /// A key made as the command line makes one: its id and its secret.
    async fn key_and_secret(&self, tenant: Option<TenantId>) -> (KeyId, KeySecret) {
        let op = self.db.operator();
        let scope = KeyScope { tenant, read_only: true, read_payloads: false };
        let (made, secret) = op
            .use_cases()
            .create_key(op.caller(), KeyName::new("portal").unwrap(), scope, None)
            .await
            .unwrap();
        (made.id, secret)
    }

    /// Runs `sql` as the tables' owner.
    async fn owner_runs(&self, sql: &str) {
        diesel::sql_query(sql).execute(&mut self.db.owner().await).await.unwrap();
    }

    async fn revoke(&self, id: KeyId) {
        let op = self.db.operator();
        op.use_cases().revoke_key(op.caller(), id).await.unwrap();
    }

    /// A sign-in link for `key`, as the port makes it.
    async fn link(&self, key: KeyId, tenant: TenantId, expires_in: Duration) -> Option<String> {
        let op = self.db.operator();
        let audit =
            AuditEntry::new(op.caller(), AuditAction::SignInLinkCreate, Some(tenant), Some(key.to_string()));
        let made =
            self.admin.ports().keys().sign_in_link(key, Utc::now() + expires_in, &audit).await.unwrap();
        made.map(|token| token.expose().to_owned())
    }

    /// Whether `text` appears in any column of the console's tables.
    async fn stored(&self, text: &str) -> bool {
        #[derive(diesel::QueryableByName)]
        struct Found {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            found: bool,
        }
        let mut conn = self.db.owner().await;
        diesel::sql_query(
            "SELECT EXISTS (SELECT 1 FROM console_sessions s WHERE s::text LIKE '%' || $1 || '%') \
                 OR EXISTS (SELECT 1 FROM console_sign_in_links l WHERE l::text LIKE '%' || $1 || '%') AS found",
        )
        .bind::<Text, _>(text)
        .get_result::<Found>(&mut conn)
        .await
        .unwrap()
        .found
    }
}

#[tokio::test]
async fn a_session_acts_as_its_key_until_signed_out_expired_or_the_key_is_revoked() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let key = f.key(Some(tenant)).await;

    let cookie = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
    let acting = f.sessions.resolve(cookie.expose()).await.unwrap().expect("a live session");
    assert_eq!(
        (acting.id, acting.scope),
        (key, KeyScope { tenant: Some(tenant), read_only: true, read_payloads: false })
    );
    assert!(!f.stored(cookie.expose()).await, "only the cookie's hash is stored");
    assert_eq!(f.sessions.resolve("not-a-session").await.unwrap(), None);

    f.sessions.end(cookie.expose()).await.unwrap();
    assert_eq!(f.sessions.resolve(cookie.expose()).await.unwrap(), None, "signed out");

    let expired = f.sessions.open(key, Utc::now() - Duration::seconds(1)).await.unwrap();
    assert_eq!(f.sessions.resolve(expired.expose()).await.unwrap(), None, "expired");

    let live = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
    assert!(f.sessions.resolve(live.expose()).await.unwrap().is_some());
    f.revoke(key).await;
    assert_eq!(f.sessions.resolve(live.expose()).await.unwrap(), None, "its key revoked");
}

#[tokio::test]
async fn a_sessions_requests_are_its_keys_use_recorded_at_most_once_a_minute() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let key = f.key(Some(tenant)).await;
    let cookie = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
    assert_eq!(crate::pg_admin::last_used(&f.db, key).await, None, "a session opened is no use yet");

    f.sessions.resolve(cookie.expose()).await.unwrap().expect("a live session");
    let first = crate::pg_admin::last_used(&f.db, key).await.expect("the request is the key's use");
    f.sessions.resolve(cookie.expose()).await.unwrap().expect("a live session");
    assert_eq!(crate::pg_admin::last_used(&f.db, key).await, Some(first), "not again within the minute");
    // A minute later (moved back here), the next request is recorded again.
    diesel::sql_query(format!(
        "UPDATE admin_keys SET last_used_at = now() - interval '61 seconds' WHERE id = '{key}'"
    ))
    .execute(&mut f.db.owner().await)
    .await
    .unwrap();
    f.sessions.resolve(cookie.expose()).await.unwrap().expect("a live session");
    assert!(crate::pg_admin::last_used(&f.db, key).await.unwrap() > first);
    // An ended session is nobody's use.
    f.sessions.end(cookie.expose()).await.unwrap();
    diesel::sql_query(format!("UPDATE admin_keys SET last_used_at = NULL WHERE id = '{key}'"))
        .execute(&mut f.db.owner().await)
        .await
        .unwrap();
    assert_eq!(f.sessions.resolve(cookie.expose()).await.unwrap(), None);
    assert_eq!(crate::pg_admin::last_used(&f.db, key).await, None);
}

#[tokio::test]
async fn a_sign_in_link_signs_in_once_before_it_expires_and_only_while_its_key_is_valid() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let key = f.key(Some(tenant)).await;

    let token = f.link(key, tenant, Duration::minutes(15)).await.expect("a link for a valid key");
    assert!(!f.stored(&token).await, "only the token's hash is stored");
    let (a, b) = tokio::join!(f.sessions.spend_link(&token), f.sessions.spend_link(&token));
    let spent: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(spent, vec![key], "two browsers at once: one sign-in");
    assert_eq!(f.sessions.spend_link(&token).await.unwrap(), None, "spent");

    let expired = f.link(key, tenant, Duration::seconds(-1)).await.unwrap();
    assert_eq!(f.sessions.spend_link(&expired).await.unwrap(), None, "expired");

    let unused = f.link(key, tenant, Duration::minutes(15)).await.unwrap();
    f.revoke(key).await;
    assert_eq!(f.sessions.spend_link(&unused).await.unwrap(), None, "its key revoked since");
    assert_eq!(f.link(key, tenant, Duration::minutes(15)).await, None, "no link for a revoked key");
    assert_eq!(f.link(KeyId::generate(), tenant, Duration::minutes(15)).await, None, "nor for no key");
}

/// Whichever way a key is presented (its secret as a bearer, a console session opened with it,
/// a sign-in link made for it), one rule says whether it authenticates, at the database's
/// clock: until it is revoked or its expiry comes. A check that drifted from the others (its
/// own copy of the rule, or another clock) fails here.
#[tokio::test]
async fn a_key_is_refused_alike_as_a_bearer_a_session_and_a_link_once_expired_or_revoked() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let keys = f.admin.ports().keys();
    let states = [
        ("without an expiry", None, None),
        ("expiring in an hour", Some("now() + interval '1 hour'"), None),
        ("expired a second ago", Some("now() - interval '1 second'"), Some(KeyRefusal::Expired)),
        ("revoked", None, Some(KeyRefusal::Revoked)),
    ];
    for (state, expires_at, refusal) in states {
        let (key, secret) = f.key_and_secret(Some(tenant)).await;
        let cookie = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
        let link = f.link(key, tenant, Duration::minutes(15)).await.expect("a link for a valid key");
        if let Some(at) = expires_at {
            f.owner_runs(&format!("UPDATE admin_keys SET expires_at = {at} WHERE id = '{key}'")).await;
        }
        if refusal == Some(KeyRefusal::Revoked) {
            f.revoke(key).await;
        }

        let as_bearer = match keys.authenticate(secret.expose()).await.unwrap() {
            Presented::Valid(found) => {
                assert_eq!(found.id, key);
                None
            }
            Presented::Refused { reason, key: refused } => {
                assert_eq!(refused, Some(key));
                Some(reason)
            }
        };
        assert_eq!(as_bearer, refusal, "{state}: as a bearer key");
        let as_session = f.sessions.resolve(cookie.expose()).await.unwrap().map(|acting| acting.id);
        assert_eq!(as_session, refusal.is_none().then_some(key), "{state}: as a session's key");
        let by_link = f.sessions.spend_link(&link).await.unwrap();
        assert_eq!(by_link, refusal.is_none().then_some(key), "{state}: as a sign-in link's key");
    }

    #[derive(diesel::QueryableByName)]
    struct Unspent {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let unspent = diesel::sql_query("SELECT count(*) AS n FROM console_sign_in_links WHERE used_at IS NULL")
        .get_result::<Unspent>(&mut f.db.owner().await)
        .await
        .unwrap()
        .n;
    assert_eq!(unspent, 2, "a link whose key was refused is left unspent");
}

#[tokio::test]
async fn pruning_deletes_what_can_sign_nobody_in_and_keeps_the_rest() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let key = f.key(Some(tenant)).await;
    let live = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
    let ended = f.sessions.open(key, Utc::now() + Duration::hours(8)).await.unwrap();
    f.sessions.end(ended.expose()).await.unwrap();
    f.sessions.open(key, Utc::now() - Duration::seconds(1)).await.unwrap();
    let fresh = f.link(key, tenant, Duration::minutes(15)).await.unwrap();
    let spent = f.link(key, tenant, Duration::minutes(15)).await.unwrap();
    f.sessions.spend_link(&spent).await.unwrap();
    f.link(key, tenant, Duration::seconds(-1)).await.unwrap();

    let batch = std::num::NonZeroU32::new(1).unwrap();
    assert_eq!(f.db.maintenance().await.prune_console_sessions(batch).await.unwrap(), 4);
    assert!(f.sessions.resolve(live.expose()).await.unwrap().is_some(), "a live session stays");
    assert_eq!(f.sessions.spend_link(&fresh).await.unwrap(), Some(key), "an unspent link stays");
    assert_eq!(f.db.maintenance().await.prune_console_sessions(batch).await.unwrap(), 1, "now spent");
}

/// A key's payload permission travels with its session: the console shows an event's payload
/// to a session whose key may read it, as the API does to the key itself.
#[tokio::test]
async fn a_session_acts_with_its_keys_payload_permission() {
    let f = Fixture::new().await;
    let tenant = f.db.operator().create_tenant("Acme").await;
    let op = f.db.operator();
    for read_payloads in [true, false] {
        let scope = KeyScope { tenant: Some(tenant), read_only: false, read_payloads };
        let (made, _) = op
            .use_cases()
            .create_key(op.caller(), KeyName::new("portal").unwrap(), scope, None)
            .await
            .unwrap();
        let cookie = f.sessions.open(made.id, Utc::now() + Duration::hours(8)).await.unwrap();
        let acting = f.sessions.resolve(cookie.expose()).await.unwrap().expect("a live session");
        assert_eq!(acting.scope, scope);
    }
}

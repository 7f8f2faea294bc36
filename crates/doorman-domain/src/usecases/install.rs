//! Installing the Slack app into a workspace for a tenant (OAuth v2), in two steps.
//!
//! 1. [`Installs::start`]: an install link names a tenant; a one-time state (ten minutes),
//!    bound to this browser, is created, and the browser is sent to Slack's authorize page.
//! 2. [`Installs::finish`]: Slack sends the browser back with a code (or `access_denied`). The
//!    state must exist, be unexpired and unused, and come back in the browser that started it
//!    — it is consumed before anything else happens — and only then is Slack asked to exchange
//!    the code. What Slack grants is recorded (tokens sealed) and the workspace linked, unless
//!    the workspace already belongs to another tenant.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::errors::{OAuthError, StorageError};
use crate::model::{
    Grant, LinkState, OpenedState, Recorded, StateRefusal, TakenState, TenantId, WorkspaceRef,
};
use crate::ports::{Clock, InstallStore, SlackOAuth};

/// How long a started install may take to come back from Slack.
pub const STATE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// How an install begins.
#[derive(Debug, PartialEq, Eq)]
pub enum Start {
    /// Send the browser to Slack with this state, and set its browser cookie.
    Begin(OpenedState),
    UnknownLink,
    ExpiredLink,
    Unavailable(StorageError),
}

/// What Slack sent the browser back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callback {
    Code(String),
    /// `error=…`, usually `access_denied` (the user cancelled).
    Denied(String),
}

/// How an install ends.
#[derive(Debug, PartialEq, Eq)]
pub enum Finish {
    Installed {
        tenant: TenantId,
        tenant_name: String,
        workspace_name: String,
        /// The workspace installed into (its team, or the enterprise of an org-wide install)
        /// and the app, for a link that opens it in Slack.
        workspace: WorkspaceRef,
        app_id: String,
        again: bool,
    },
    /// The workspace belongs to another tenant.
    Taken {
        workspace_name: String,
    },
    /// The user cancelled at Slack; the state is consumed.
    Cancelled {
        tenant_name: String,
    },
    /// The state was not accepted: Slack was not asked.
    Refused(StateRefusal),
    /// Slack did not grant the install: nothing was recorded.
    SlackFailed(OAuthError),
    Unavailable(StorageError),
}

/// The install use cases over their ports.
#[derive(Debug)]
pub struct Installs<S, O, C> {
    store: S,
    slack: O,
    clock: C,
}

impl<S, O, C> Installs<S, O, C>
where
    S: InstallStore,
    O: SlackOAuth,
    C: Clock,
{
    pub fn new(store: S, slack: O, clock: C) -> Self {
        Self { store, slack, clock }
    }

    /// An install link was opened: a fresh state for its tenant, or why not.
    pub async fn start(&self, link_token: &str) -> Start {
        let tenant = match self.store.link(link_token).await {
            Ok(LinkState::Active(tenant)) => tenant,
            Ok(LinkState::Expired) => return Start::ExpiredLink,
            Ok(LinkState::Unknown) => return Start::UnknownLink,
            Err(error) => return Start::Unavailable(error),
        };
        let expires_at = self.expires_at();
        match self.store.open_state(tenant, expires_at).await {
            Ok(opened) => Start::Begin(opened),
            Err(error) => Start::Unavailable(error),
        }
    }

    /// Slack sent the browser back: take the state, then (only then) exchange the code and
    /// record what was granted.
    pub async fn finish(&self, state: Option<&str>, browser: Option<&str>, callback: Callback) -> Finish {
        let (Some(state), Some(browser)) = (state, browser) else {
            return Finish::Refused(StateRefusal::Missing);
        };
        let (tenant, tenant_name) = match self.store.take_state(state, browser).await {
            Ok(TakenState::Taken { tenant, tenant_name }) => (tenant, tenant_name),
            Ok(TakenState::Refused(why)) => return Finish::Refused(why),
            Err(error) => return Finish::Unavailable(error),
        };
        let code = match callback {
            Callback::Code(code) => code,
            Callback::Denied(_) => return Finish::Cancelled { tenant_name },
        };
        let grant: Grant = match self.slack.exchange(&code).await {
            Ok(grant) => grant,
            Err(error) => return Finish::SlackFailed(error),
        };
        let workspace_name = grant.workspace_name.clone();
        let installed = |again| Finish::Installed {
            tenant,
            tenant_name,
            workspace_name: grant.workspace_name.clone(),
            workspace: grant.workspace.clone(),
            app_id: grant.app_id.clone(),
            again,
        };
        match self.store.record(tenant, &grant).await {
            Ok(Recorded::Installed) => installed(false),
            Ok(Recorded::Updated) => installed(true),
            Ok(Recorded::Taken) => Finish::Taken { workspace_name },
            Err(error) => Finish::Unavailable(error),
        }
    }

    fn expires_at(&self) -> DateTime<Utc> {
        self.clock.now() + chrono::Duration::from_std(STATE_LIFETIME).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use mockall::Sequence;

    use super::*;
    use crate::model::{SlackToken, WorkspaceId};
    use crate::ports::{MockClock, MockInstallStore, MockSlackOAuth};

    fn ready<T: Send + 'static>(value: T) -> Pin<Box<dyn Future<Output = T> + Send>> {
        Box::pin(async move { value })
    }

    fn tenant() -> TenantId {
        "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11".parse().unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    fn grant() -> Grant {
        Grant {
            workspace: WorkspaceRef::team(WorkspaceId::new("T9TK3CUKW").unwrap()),
            workspace_name: "Acme HQ".into(),
            app_id: "A0KRD7HC3".into(),
            bot_user_id: "U0KRQLJ9H".into(),
            bot_token: SlackToken::new("xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy").unwrap(),
            scopes: "commands,chat:write".into(),
            refresh_token: None,
            expires_at: None,
        }
    }

    fn installs(
        store: MockInstallStore,
        slack: MockSlackOAuth,
    ) -> Installs<MockInstallStore, MockSlackOAuth, MockClock> {
        let mut clock = MockClock::new();
        clock.expect_now().returning(now);
        Installs::new(store, slack, clock)
    }

    fn taken() -> TakenState {
        TakenState::Taken { tenant: tenant(), tenant_name: "Acme".into() }
    }

    #[tokio::test]
    async fn a_live_link_opens_a_ten_minute_state_for_its_tenant() {
        let mut store = MockInstallStore::new();
        store.expect_link().returning(|_| ready(Ok(LinkState::Active(tenant()))));
        store
            .expect_open_state()
            .withf(|t, expires| *t == tenant() && *expires == now() + chrono::Duration::minutes(10))
            .times(1)
            .returning(|_, _| ready(Ok(OpenedState { state: "s".into(), browser: "b".into() })));
        let start = installs(store, MockSlackOAuth::new()).start("link").await;
        assert!(matches!(start, Start::Begin(_)), "{start:?}");
    }

    #[tokio::test]
    async fn an_unknown_or_expired_link_creates_nothing() {
        for (link, expected) in
            [(LinkState::Unknown, Start::UnknownLink), (LinkState::Expired, Start::ExpiredLink)]
        {
            let mut store = MockInstallStore::new();
            store.expect_link().return_once(move |_| ready(Ok(link)));
            store.expect_open_state().never();
            assert_eq!(installs(store, MockSlackOAuth::new()).start("link").await, expected);
        }
    }

    #[tokio::test]
    async fn a_state_that_is_missing_or_refused_never_reaches_slack() {
        let mut slack = MockSlackOAuth::new();
        slack.expect_exchange().never();
        let mut store = MockInstallStore::new();
        store.expect_take_state().never();
        let finish = installs(store, slack).finish(Some("s"), None, Callback::Code("c".into())).await;
        assert_eq!(finish, Finish::Refused(StateRefusal::Missing), "no cookie: the store is not even asked");

        for why in
            [StateRefusal::Unknown, StateRefusal::Expired, StateRefusal::Used, StateRefusal::OtherBrowser]
        {
            let mut slack = MockSlackOAuth::new();
            slack.expect_exchange().never();
            let mut store = MockInstallStore::new();
            store.expect_take_state().return_once(move |_, _| ready(Ok(TakenState::Refused(why))));
            store.expect_record().never();
            let finish =
                installs(store, slack).finish(Some("s"), Some("b"), Callback::Code("c".into())).await;
            assert_eq!(finish, Finish::Refused(why));
        }
    }

    #[tokio::test]
    async fn the_state_is_consumed_before_slack_is_asked_and_the_grant_recorded_after() {
        let mut seq = Sequence::new();
        let mut store = MockInstallStore::new();
        let mut slack = MockSlackOAuth::new();
        store.expect_take_state().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(taken())));
        slack
            .expect_exchange()
            .withf(|code| code == "c0de")
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| ready(Ok(grant())));
        store
            .expect_record()
            .withf(|t, g| *t == tenant() && g.bot_user_id == "U0KRQLJ9H")
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| ready(Ok(Recorded::Installed)));
        let finish = installs(store, slack).finish(Some("s"), Some("b"), Callback::Code("c0de".into())).await;
        assert_eq!(
            finish,
            Finish::Installed {
                tenant: tenant(),
                tenant_name: "Acme".into(),
                workspace_name: "Acme HQ".into(),
                workspace: WorkspaceRef::team(WorkspaceId::new("T9TK3CUKW").unwrap()),
                app_id: "A0KRD7HC3".into(),
                again: false
            }
        );
    }

    #[tokio::test]
    async fn a_cancelled_install_consumes_the_state_and_asks_slack_nothing() {
        let mut store = MockInstallStore::new();
        store.expect_take_state().times(1).returning(|_, _| ready(Ok(taken())));
        let mut slack = MockSlackOAuth::new();
        slack.expect_exchange().never();
        let finish = installs(store, slack)
            .finish(Some("s"), Some("b"), Callback::Denied("access_denied".into()))
            .await;
        assert_eq!(finish, Finish::Cancelled { tenant_name: "Acme".into() });
    }

    #[tokio::test]
    async fn slack_refusing_records_nothing_and_another_tenants_workspace_is_refused() {
        let mut store = MockInstallStore::new();
        store.expect_take_state().returning(|_, _| ready(Ok(taken())));
        store.expect_record().never();
        let mut slack = MockSlackOAuth::new();
        slack.expect_exchange().returning(|_| ready(Err(OAuthError::Refused("invalid_code".into()))));
        let finish = installs(store, slack).finish(Some("s"), Some("b"), Callback::Code("c".into())).await;
        assert_eq!(finish, Finish::SlackFailed(OAuthError::Refused("invalid_code".into())));

        let mut store = MockInstallStore::new();
        store.expect_take_state().returning(|_, _| ready(Ok(taken())));
        store.expect_record().returning(|_, _| ready(Ok(Recorded::Taken)));
        let mut slack = MockSlackOAuth::new();
        slack.expect_exchange().returning(|_| ready(Ok(grant())));
        let finish = installs(store, slack).finish(Some("s"), Some("b"), Callback::Code("c".into())).await;
        assert_eq!(finish, Finish::Taken { workspace_name: "Acme HQ".into() });
    }
}

//! The operator use cases against mocks of their ports: refusals happen before any write,
//! access rules are the same for every action, the org-wide rule, audit entries.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use mockall::Sequence;

use super::installs::LinkLifetime;
use super::{Operator, OperatorSettings};
use crate::errors::{OperatorError, StorageError, ValidationError};
use crate::model::*;
use crate::ports::*;

type Fut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

fn ready<T: Send + 'static>(value: T) -> Fut<T> {
    Box::pin(async move { value })
}

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap()
}

fn own() -> TenantId {
    "7b6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a11".parse().unwrap()
}

fn other() -> TenantId {
    "0f6e2f7a-1f1c-4c53-9a57-0d3c1b3b8a22".parse().unwrap()
}

fn record(id: TenantId) -> TenantRecord {
    TenantRecord { id, name: "Acme".into(), created_at: now(), retain_payloads: false }
}

fn caller(actor: Actor) -> Caller {
    Caller { actor, request: RequestId::new("req-7").unwrap() }
}

fn key(tenant: Option<TenantId>, read_only: bool) -> Caller {
    caller(Actor::Key(ApiKey {
        id: "5d9f7c2e-6a1b-4f3e-8c2d-1a2b3c4d5e6f".parse().unwrap(),
        name: "backend".into(),
        scope: KeyScope { tenant, read_only },
    }))
}

fn cli() -> Caller {
    caller(Actor::Cli { user: "ops".into() })
}

fn ws(id: &str) -> WorkspaceId {
    WorkspaceId::new(id).unwrap()
}

#[derive(Default)]
struct Ports {
    tenants: MockTenants,
    workspaces: MockWorkspaces,
    agents: MockAgents,
    installs: MockInstallRecords,
    ledger: MockLedger,
    audit: MockAuditTrail,
    keys: MockAdminKeys,
    destinations: MockDestinations,
    clock: MockClock,
}

impl OperatorPorts for Ports {
    type Tenants = MockTenants;
    type Workspaces = MockWorkspaces;
    type Agents = MockAgents;
    type Installs = MockInstallRecords;
    type Ledger = MockLedger;
    type Audit = MockAuditTrail;
    type Keys = MockAdminKeys;
    type Destinations = MockDestinations;
    type Clock = MockClock;

    fn tenants(&self) -> &MockTenants {
        &self.tenants
    }
    fn workspaces(&self) -> &MockWorkspaces {
        &self.workspaces
    }
    fn agents(&self) -> &MockAgents {
        &self.agents
    }
    fn installs(&self) -> &MockInstallRecords {
        &self.installs
    }
    fn ledger(&self) -> &MockLedger {
        &self.ledger
    }
    fn audit(&self) -> &MockAuditTrail {
        &self.audit
    }
    fn keys(&self) -> &MockAdminKeys {
        &self.keys
    }
    fn destinations(&self) -> &MockDestinations {
        &self.destinations
    }
    fn clock(&self) -> &MockClock {
        &self.clock
    }
}

impl Ports {
    fn new() -> Self {
        let mut ports = Self::default();
        ports.clock.expect_now().returning(now);
        ports
    }

    /// `own()` exists; any other tenant does not.
    fn with_own_tenant(mut self) -> Self {
        self.tenants.expect_get().returning(|id| ready(Ok((id == own()).then(|| record(id)))));
        self
    }

    /// No port may write anything, nor any tenant be read.
    fn untouched(mut self) -> Self {
        self.tenants.expect_get().never();
        self.never_writes()
    }

    /// No port may write anything.
    fn never_writes(mut self) -> Self {
        self.tenants.expect_create().never();
        self.tenants.expect_set_retain_payloads().never();
        self.workspaces.expect_link().never();
        self.workspaces.expect_remove().never();
        self.agents.expect_set().never();
        self.agents.expect_set_paused().never();
        self.installs.expect_create_link().never();
        self.audit.expect_record().never();
        self.keys.expect_create().never();
        self.keys.expect_revoke().never();
        self
    }

    fn build(self) -> Operator<Ports> {
        self.build_with(Some("https://doorman.example/"))
    }

    fn build_with(self, install_base_url: Option<&str>) -> Operator<Ports> {
        Operator::new(
            self,
            OperatorSettings {
                install_base_url: install_base_url.map(str::to_owned),
                stranded_after: Duration::from_secs(600),
                replay_hold: Duration::from_secs(90),
            },
        )
    }
}

/// Every change the operator can make to one tenant, run for `caller` against `tenant`.
async fn every_change(operator: &Operator<Ports>, caller: &Caller, tenant: TenantId) -> Vec<OperatorError> {
    let url = AgentUrl::parse("https://agent.example/slack").unwrap();
    let secret = AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let lifetime = LinkLifetime::new(Duration::from_secs(3600)).unwrap();
    vec![
        operator.set_retain_payloads(caller, tenant, true).await.unwrap_err(),
        operator.link_workspace(caller, tenant, Some(ws("T1")), None).await.unwrap_err(),
        operator.unlink_workspace(caller, tenant, &ws("T1")).await.unwrap_err(),
        operator.set_agent(caller, tenant, url, secret).await.unwrap_err(),
        operator.pause_agent(caller, tenant, true).await.unwrap_err(),
        operator.create_install_link(caller, tenant, lifetime).await.unwrap_err(),
        operator.uninstall(caller, tenant, &ws("T1")).await.unwrap_err(),
    ]
}

// --- access ------------------------------------------------------------------------------

#[tokio::test]
async fn a_scoped_key_meets_another_tenant_as_unknown_before_anything_is_read_or_written() {
    let operator = Ports::new().untouched().build();
    let scoped = key(Some(own()), false);
    for error in every_change(&operator, &scoped, other()).await {
        assert_eq!(error, OperatorError::UnknownTenant(other()));
    }
    assert_eq!(operator.tenant(&scoped, other()).await, Err(OperatorError::UnknownTenant(other())));
    assert_eq!(operator.agent(&scoped, other()).await, Err(OperatorError::UnknownTenant(other())));
    let event = ExternalEventId::new("Ev1").unwrap();
    assert_eq!(operator.event(&scoped, other(), event).await, Err(OperatorError::UnknownTenant(other())));
}

#[tokio::test]
async fn a_read_only_key_is_forbidden_every_change_before_anything_is_read_or_written() {
    let operator = Ports::new().untouched().build();
    for error in every_change(&operator, &key(Some(own()), true), own()).await {
        assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
    }
}

#[tokio::test]
async fn an_unknown_tenant_is_unknown_to_every_change_and_nothing_is_written() {
    let operator = Ports::new().with_own_tenant().never_writes().build();
    for error in every_change(&operator, &cli(), other()).await {
        assert_eq!(error, OperatorError::UnknownTenant(other()));
    }
}

#[tokio::test]
async fn only_a_writer_for_every_tenant_creates_tenants() {
    let operator = Ports::new().untouched().build();
    for caller in [key(Some(own()), false), key(None, true)] {
        let error =
            operator.create_tenant(&caller, TenantName::new("Acme").unwrap(), None).await.unwrap_err();
        assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
    }
}

#[tokio::test]
async fn a_scoped_key_lists_only_its_own_tenant() {
    let mut ports = Ports::new();
    ports
        .tenants
        .expect_list()
        .withf(|only, _| *only == Some(own()))
        .times(1)
        .returning(|_, _| ready(Ok(Page { items: vec![record(own())], next: None })));
    let page = ports.build().tenants(&key(Some(own()), true), &PageRequest::default()).await.unwrap();
    assert_eq!(page.items, vec![record(own())]);
}

// --- tenants -----------------------------------------------------------------------------

#[tokio::test]
async fn creating_a_tenant_audits_it_in_the_same_call_and_scopes_the_idempotency_key_to_the_caller() {
    let mut ports = Ports::new();
    let caller = key(None, false);
    ports
        .tenants
        .expect_create()
        .withf(|tenant, idempotency, audit| {
            let idempotency = idempotency.as_ref().unwrap();
            tenant.name.as_str() == "Acme"
                && idempotency.scope == "key:5d9f7c2e-6a1b-4f3e-8c2d-1a2b3c4d5e6f"
                && idempotency.key.as_str() == "k-1"
                && idempotency.fingerprint == "Acme"
                && audit.action == AuditAction::TenantCreate
                && audit.tenant == Some(tenant.id)
                && audit.caller.request.as_str() == "req-7"
                && audit.actor_kind() == "key"
                && audit.actor_name() == "backend"
        })
        .times(1)
        .returning(|tenant, _, _| ready(Ok(Created::New(record(tenant.id)))));
    let created = ports
        .build()
        .create_tenant(&caller, TenantName::new(" Acme ").unwrap(), Some(IdempotencyKey::new("k-1").unwrap()))
        .await
        .unwrap();
    assert!(created.new);
}

#[tokio::test]
async fn an_idempotent_repeat_returns_the_first_tenant_and_a_reused_key_is_refused() {
    for (answer, expected) in [
        (Created::Repeated(record(own())), Ok((own(), false))),
        (Created::KeyReused, Err(OperatorError::IdempotencyKeyReused)),
    ] {
        let mut ports = Ports::new();
        ports.tenants.expect_create().times(1).return_once(move |_, _, _| ready(Ok(answer)));
        let created = ports
            .build()
            .create_tenant(&cli(), TenantName::new("Acme").unwrap(), Some(IdempotencyKey::new("k").unwrap()))
            .await
            .map(|c| (c.tenant.id, c.new));
        assert_eq!(created, expected);
    }
}

// --- workspaces: the org-wide rule -------------------------------------------------------

#[tokio::test]
async fn an_enterprise_alone_links_an_org_wide_install_and_a_team_in_a_grid_links_the_team() {
    for (team, enterprise, org_wide) in
        [(None, Some("E1"), true), (Some("T1"), Some("E1"), false), (Some("T1"), None, false)]
    {
        let mut ports = Ports::new().with_own_tenant();
        ports
            .workspaces
            .expect_link()
            .withf(move |tenant, platform, workspace, audit| {
                *tenant == own()
                    && *platform == Platform::Slack
                    && workspace.is_enterprise_install() == org_wide
                    && workspace.team_id().map(WorkspaceId::as_str) == team
                    && workspace.enterprise_id().map(WorkspaceId::as_str) == enterprise
                    && audit.action == AuditAction::WorkspaceLink
                    && audit.target.as_deref() == Some(workspace.to_string().as_str())
            })
            .times(1)
            .returning(|_, platform, workspace, _| {
                ready(Ok(Linked::New(LinkedWorkspace {
                    platform,
                    workspace: workspace.clone(),
                    linked_at: now(),
                })))
            });
        let linked =
            ports.build().link_workspace(&cli(), own(), team.map(ws), enterprise.map(ws)).await.unwrap();
        assert!(linked.new);
    }
}

#[tokio::test]
async fn a_tenants_workspaces_are_listed_once_it_is_visible() {
    let linked = LinkedWorkspace {
        platform: Platform::Slack,
        workspace: WorkspaceRef::team(ws("T1")),
        linked_at: now(),
    };
    let mut ports = Ports::new().with_own_tenant();
    let listed = linked.clone();
    ports
        .workspaces
        .expect_list()
        .withf(|tenant| *tenant == own())
        .times(1)
        .returning(move |_| ready(Ok(vec![listed.clone()])));
    let operator = ports.build();
    assert_eq!(operator.workspaces(&key(Some(own()), true), own()).await.unwrap(), vec![linked]);
    assert_eq!(operator.workspaces(&cli(), other()).await, Err(OperatorError::UnknownTenant(other())));
}

#[tokio::test]
async fn a_workspace_with_neither_id_is_refused_before_any_write() {
    let operator = Ports::new().with_own_tenant().never_writes().build();
    let error = operator.link_workspace(&cli(), own(), None, None).await.unwrap_err();
    assert!(matches!(error, OperatorError::Invalid(ValidationError { what: "workspace", .. })), "{error:?}");
}

#[tokio::test]
async fn a_workspace_another_tenant_has_is_refused() {
    let mut ports = Ports::new().with_own_tenant();
    ports.workspaces.expect_link().times(1).returning(|_, _, _, _| ready(Ok(Linked::Taken)));
    let error = ports.build().link_workspace(&cli(), own(), Some(ws("T1")), None).await.unwrap_err();
    assert_eq!(error, OperatorError::WorkspaceTaken);
}

#[tokio::test]
async fn unlinking_finds_the_link_its_id_names_and_an_unknown_id_removes_nothing() {
    let link = |team: Option<&str>, enterprise: Option<&str>| LinkedWorkspace {
        platform: Platform::Slack,
        workspace: WorkspaceRef::operator(team.map(ws), enterprise.map(ws)).unwrap(),
        linked_at: now(),
    };
    let mut ports = Ports::new().with_own_tenant();
    let links = vec![link(Some("T1"), Some("E1")), link(None, Some("E2"))];
    ports.workspaces.expect_list().returning(move |_| ready(Ok(links.clone())));
    ports
        .workspaces
        .expect_remove()
        .withf(|_, _, workspace, _| workspace.is_enterprise_install() && workspace.is_named_by(&ws("E2")))
        .times(1)
        .returning(|_, _, _, _| ready(Ok(Removed { link: true, installation: false })));
    let operator = ports.build();
    operator.unlink_workspace(&cli(), own(), &ws("E2")).await.unwrap();
    // E1 is the grid of T1's link, not the name of a link: nothing is removed.
    let error = operator.unlink_workspace(&cli(), own(), &ws("E1")).await.unwrap_err();
    assert_eq!(error, OperatorError::NotFound { what: "workspace", id: "E1".into() });
}

// --- agents ------------------------------------------------------------------------------

#[tokio::test]
async fn an_agent_whose_destination_is_refused_is_never_stored() {
    let mut ports = Ports::new().with_own_tenant().never_writes();
    ports
        .destinations
        .expect_check()
        .times(1)
        .returning(|_| ready(Err("resolves to 10.0.0.1, a private address".into())));
    let url = AgentUrl::parse("https://internal.example/agent").unwrap();
    let secret = AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let error = ports.build().set_agent(&cli(), own(), url, secret).await.unwrap_err();
    assert!(matches!(error, OperatorError::Refused { what: "agent URL", .. }), "{error:?}");
}

#[tokio::test]
async fn setting_an_agent_checks_the_destination_first_and_audits_the_url_without_credentials() {
    let mut ports = Ports::new().with_own_tenant();
    let mut seq = Sequence::new();
    ports.destinations.expect_check().times(1).in_sequence(&mut seq).returning(|_| ready(Ok(())));
    ports
        .agents
        .expect_set()
        .withf(|_, _, _, audit| audit.target.as_deref() == Some("https://agent.example/slack"))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(())));
    let url = AgentUrl::parse("https://user:pw@agent.example/slack?token=t0k").unwrap();
    let secret = AgentSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    ports.build().set_agent(&cli(), own(), url, secret).await.unwrap();
}

#[tokio::test]
async fn pausing_a_tenant_without_an_agent_says_so() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .agents
        .expect_set_paused()
        .withf(|_, paused, audit| *paused && audit.action == AuditAction::AgentPause)
        .times(1)
        .returning(|_, _, _| ready(Ok(false)));
    assert_eq!(ports.build().pause_agent(&cli(), own(), true).await, Err(OperatorError::NoAgent(own())));
}

// --- installs ----------------------------------------------------------------------------

#[tokio::test]
async fn an_install_link_needs_installs_configured_and_expires_after_its_lifetime() {
    let lifetime = LinkLifetime::new(Duration::from_secs(3600)).unwrap();
    let operator = Ports::new().with_own_tenant().never_writes().build_with(None);
    assert_eq!(operator.create_install_link(&cli(), own(), lifetime).await, Err(OperatorError::InstallsOff));

    let mut ports = Ports::new().with_own_tenant();
    let expires = now() + chrono::Duration::hours(1);
    ports
        .installs
        .expect_create_link()
        .withf(move |tenant, at, audit| {
            *tenant == own() && *at == expires && audit.action == AuditAction::InstallLinkCreate
        })
        .times(1)
        .returning(|_, _, _| ready(Ok("t0ken".into())));
    let link = ports.build().create_install_link(&cli(), own(), lifetime).await.unwrap();
    assert_eq!(link.url, "https://doorman.example/slack/install/t0ken");
    assert_eq!(link.expires_at, expires);
    assert!(LinkLifetime::new(Duration::from_secs(59)).is_err());
    assert!(LinkLifetime::new(Duration::from_secs(30 * 24 * 3600 + 1)).is_err());
    assert!(LinkLifetime::new(Duration::from_secs(30 * 24 * 3600)).is_ok());
    assert_eq!(LinkLifetime::DEFAULT, Duration::from_secs(86_400), "a day unless asked");
}

fn summary(tenant: TenantId, team: &str) -> InstallationSummary {
    InstallationSummary {
        tenant,
        workspace: WorkspaceRef::team(ws(team)),
        app_id: "A1".into(),
        bot_user_id: "U1".into(),
        scopes: "chat:write".into(),
        has_bot_token: true,
        token_expires_at: None,
        installed_at: now(),
        updated_at: now(),
    }
}

#[tokio::test]
async fn installations_are_listed_within_the_callers_scope() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .installs
        .expect_list()
        .withf(|tenant| *tenant == Some(own()))
        .times(2)
        .returning(|_| ready(Ok(vec![summary(own(), "T1")])));
    let operator = ports.build();
    let scoped = key(Some(own()), true);
    assert_eq!(operator.installations(&scoped, None).await.unwrap(), vec![summary(own(), "T1")]);
    assert_eq!(operator.installations(&cli(), Some(own())).await.unwrap(), vec![summary(own(), "T1")]);
    assert_eq!(
        operator.installations(&scoped, Some(other())).await,
        Err(OperatorError::UnknownTenant(other()))
    );
}

#[tokio::test]
async fn uninstalling_a_workspace_without_an_installation_removes_nothing() {
    let mut ports = Ports::new().with_own_tenant();
    ports.installs.expect_list().returning(|_| ready(Ok(vec![])));
    ports.workspaces.expect_remove().never();
    let error = ports.build().uninstall(&cli(), own(), &ws("T1")).await.unwrap_err();
    assert_eq!(error, OperatorError::NotFound { what: "installation", id: "T1".into() });
}

// --- events ------------------------------------------------------------------------------

fn receipt(claimed_ago_s: i64) -> Receipt {
    Receipt {
        key: ReceiptKey {
            tenant: own(),
            platform: Platform::Slack,
            external_id: ExternalEventId::new("Ev1").unwrap(),
        },
        event_type: "app_mention".into(),
        attempt: 0,
        claimed_at: now() - chrono::Duration::seconds(claimed_ago_s),
        handled_at: None,
        failure: None,
        replays: 0,
    }
}

#[tokio::test]
async fn an_event_reads_in_flight_then_stranded_and_an_absent_one_is_not_found() {
    for (ago, status) in [(599, ReceiptStatus::InFlight), (601, ReceiptStatus::Stranded)] {
        let mut ports = Ports::new().with_own_tenant();
        ports
            .ledger
            .expect_receipt()
            .returning(move |_| ready(Ok(Some(ReceiptRecord { receipt: receipt(ago), payload_kept: true }))));
        let report =
            ports.build().event(&key(Some(own()), true), own(), ExternalEventId::new("Ev1").unwrap()).await;
        assert_eq!(report.map(|r| (r.status, r.payload_kept)), Ok((status, true)));
    }
    let mut ports = Ports::new().with_own_tenant();
    ports.ledger.expect_receipt().returning(|_| ready(Ok(None)));
    let error = ports.build().event(&cli(), own(), ExternalEventId::new("Ev9").unwrap()).await.unwrap_err();
    assert_eq!(error, OperatorError::NotFound { what: "event", id: "Ev9".into() });
}

#[tokio::test]
async fn a_stranded_listing_asks_for_receipts_older_than_the_threshold() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .ledger
        .expect_list()
        .withf(|tenant, filter, _| {
            *tenant == Some(own())
                && filter.state == EventState::Stranded
                && filter.stranded_before == now() - chrono::Duration::seconds(600)
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![], next: None })));
    let page =
        ports.build().events(&cli(), Some(own()), EventState::Stranded, None, &PageRequest::default()).await;
    assert!(page.unwrap().items.is_empty());
}

mod replays {
    use super::*;
    use crate::usecases::Inbound;

    type Live = Inbound<MockTenantDirectory, MockAgentBridge, MockReceiptStore, MockInstallations, MockClock>;

    fn inbound() -> Live {
        let mut clock = MockClock::new();
        clock.expect_now().returning(now);
        let mut bridge = MockAgentBridge::new();
        bridge.expect_dispatch().never();
        Inbound::new(
            MockTenantDirectory::new(),
            bridge,
            MockReceiptStore::new(),
            MockInstallations::new(),
            clock,
            Retention::new(Duration::from_secs(3600), 10).unwrap(),
        )
    }

    fn stored(records: Vec<ReceiptRecord>) -> MockStoredEvents {
        let mut stored = MockStoredEvents::new();
        stored.expect_select().returning(move |_, _| ready(Ok(records.clone())));
        stored
    }

    #[tokio::test]
    async fn a_replay_is_audited_before_anything_is_selected_or_sent() {
        let mut ports = Ports::new().with_own_tenant();
        let mut seq = Sequence::new();
        ports
            .audit
            .expect_record()
            .withf(|entry| {
                entry.action == AuditAction::EventsReplay && entry.target.as_deref() == Some("Ev1")
            })
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| ready(Ok(())));
        let mut stored = MockStoredEvents::new();
        stored.expect_select().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(vec![])));
        let selection = ReplaySelection::Event(ExternalEventId::new("Ev1").unwrap());
        let report =
            ports.build().replay(&cli(), &inbound(), &stored, own(), &selection, false).await.unwrap();
        assert_eq!(report[0].outcome, ReplayOutcome::Unknown);
    }

    #[tokio::test]
    async fn a_read_only_key_may_dry_run_but_not_replay_and_a_dry_run_is_not_audited() {
        let mut ports = Ports::new().with_own_tenant();
        ports.audit.expect_record().never();
        let operator = ports.build();
        let read_only = key(Some(own()), true);
        let selection = ReplaySelection::FailedSince(now());
        let kept = ReceiptRecord { receipt: receipt(60), payload_kept: true };
        let report = operator
            .replay(&read_only, &inbound(), &stored(vec![kept]), own(), &selection, true)
            .await
            .unwrap();
        assert_eq!(report[0].outcome, ReplayOutcome::WouldReplay);
        let error = operator
            .replay(&read_only, &inbound(), &stored(vec![]), own(), &selection, false)
            .await
            .unwrap_err();
        assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
    }
}

// --- audit and keys ----------------------------------------------------------------------

#[tokio::test]
async fn a_scoped_key_reads_only_its_tenants_audit_entries() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .audit
        .expect_list()
        .withf(|tenant, _| *tenant == Some(own()))
        .times(1)
        .returning(|_, _| ready(Ok(Page { items: vec![], next: None })));
    let operator = ports.build();
    let scoped = key(Some(own()), true);
    operator.audit(&scoped, None, &PageRequest::default()).await.unwrap();
    let error = operator.audit(&scoped, Some(other()), &PageRequest::default()).await.unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(other()));
}

#[tokio::test]
async fn keys_are_managed_from_the_command_line_only() {
    let operator = Ports::new().untouched().build();
    let unscoped = key(None, false);
    let error = operator.create_key(
        &unscoped,
        KeyName::new("x").unwrap(),
        KeyScope { tenant: None, read_only: false },
    );
    assert!(matches!(error.await, Err(OperatorError::Forbidden(_))));
    assert!(matches!(
        operator.revoke_key(&unscoped, KeyId::generate()).await,
        Err(OperatorError::Forbidden(_))
    ));
    assert!(matches!(operator.keys(&unscoped).await, Err(OperatorError::Forbidden(_))));
}

#[tokio::test]
async fn a_key_for_a_tenant_that_does_not_exist_is_not_made() {
    let operator = Ports::new().with_own_tenant().never_writes().build();
    let scope = KeyScope { tenant: Some(other()), read_only: false };
    let error = operator.create_key(&cli(), KeyName::new("x").unwrap(), scope).await.unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(other()));
}

#[tokio::test]
async fn a_storage_failure_is_passed_on_as_it_is() {
    let mut ports = Ports::new();
    ports.tenants.expect_get().returning(|_| ready(Err(StorageError::Unavailable("down".into()))));
    let error = ports.build().tenant(&cli(), own()).await.unwrap_err();
    assert_eq!(error, OperatorError::Storage(StorageError::Unavailable("down".into())));
}

mod maintenance {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_run_is_recorded_before_it_changes_anything_and_its_result_after() {
        let mut ports = Ports::new();
        let mut seq = Sequence::new();
        let started = Arc::new(AtomicBool::new(false));
        let recorded = started.clone();
        ports
            .audit
            .expect_record()
            .withf(|e| e.action == AuditAction::ReceiptsPrune && e.target.as_deref() == Some("started"))
            .times(1)
            .in_sequence(&mut seq)
            .returning(move |_| {
                recorded.store(true, Ordering::SeqCst);
                ready(Ok(()))
            });
        ports
            .audit
            .expect_record()
            .withf(|e| e.target.as_deref() == Some("deleted 7") && e.tenant.is_none())
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| ready(Ok(())));
        let ran = started.clone();
        let run = async move {
            assert!(ran.load(Ordering::SeqCst), "the run began after its start was recorded");
            Ok(7_u64)
        };
        let deleted =
            ports.build().maintain(&cli(), AuditAction::ReceiptsPrune, run, |n| format!("deleted {n}")).await;
        assert_eq!(deleted, Ok(7));
    }

    #[tokio::test]
    async fn a_run_that_stops_records_why_and_one_whose_start_cannot_be_recorded_never_runs() {
        let mut ports = Ports::new();
        let mut seq = Sequence::new();
        ports.audit.expect_record().times(1).in_sequence(&mut seq).returning(|_| ready(Ok(())));
        ports
            .audit
            .expect_record()
            .withf(|e| e.target.as_deref().is_some_and(|t| t.starts_with("stopped: storage unavailable")))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| ready(Ok(())));
        let down = StorageError::Unavailable("no primary".into());
        let failed = ports
            .build()
            .maintain(&cli(), AuditAction::SecretsRotate, async { Err::<u64, _>(down) }, |_| String::new())
            .await;
        assert!(matches!(failed, Err(OperatorError::Storage(_))), "{failed:?}");

        let mut ports = Ports::new();
        ports
            .audit
            .expect_record()
            .times(1)
            .returning(|_| ready(Err(StorageError::Unavailable("down".into()))));
        let never = async { panic!("ran without its start recorded") };
        let refused: Result<u64, _> =
            ports.build().maintain(&cli(), AuditAction::InstallStatesPrune, never, |_| String::new()).await;
        assert!(refused.is_err());
    }

    #[tokio::test]
    async fn only_a_caller_for_every_tenant_may_run_maintenance() {
        for caller in [key(Some(own()), false), key(None, true)] {
            let ports = Ports::new().untouched();
            let refused: Result<u64, _> = ports
                .build()
                .maintain(&caller, AuditAction::ReceiptsPrune, async { panic!("ran") }, |_| String::new())
                .await;
            assert!(matches!(refused, Err(OperatorError::Forbidden(_))), "{refused:?}");
        }
    }
}

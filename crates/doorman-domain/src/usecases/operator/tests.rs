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
    TenantRecord {
        id,
        name: "Acme".into(),
        created_at: now(),
        retain_payloads: false,
        redelivery: None,
        read_only_portals_read_payloads: false,
    }
}

fn caller(actor: Actor) -> Caller {
    Caller { actor, request: RequestId::new("req-7").unwrap() }
}

fn key(tenant: Option<TenantId>, read_only: bool) -> Caller {
    key_of(KeyScope { tenant, read_only, read_payloads: false })
}

/// A key given `read_payloads`.
fn payload_reader(tenant: Option<TenantId>, read_only: bool) -> Caller {
    key_of(KeyScope { tenant, read_only, read_payloads: true })
}

fn key_of(scope: KeyScope) -> Caller {
    caller(Actor::Key(ApiKey {
        id: "5d9f7c2e-6a1b-4f3e-8c2d-1a2b3c4d5e6f".parse().unwrap(),
        name: "backend".into(),
        scope,
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
    jobs: MockReplayJobs,
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
    type Jobs = MockReplayJobs;
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
    fn jobs(&self) -> &MockReplayJobs {
        &self.jobs
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
        self.tenants.expect_set_redelivery().never();
        self.tenants.expect_set_read_only_portals_read_payloads().never();
        self.tenants.expect_rename().never();
        self.tenants.expect_delete().never();
        self.tenants.expect_purge_receipts().never();
        self.workspaces.expect_link().never();
        self.workspaces.expect_remove().never();
        self.agents.expect_set().never();
        self.agents.expect_set_paused().never();
        self.agents.expect_remove().never();
        self.installs.expect_create_link().never();
        self.audit.expect_record().never();
        self.keys.expect_create().never();
        self.keys.expect_revoke().never();
        self.keys.expect_sign_in_link().never();
        self.jobs.expect_create().never();
        self.jobs.expect_record().never();
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
                console_base_url: Some("https://admin.example/".to_owned()),
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
        operator.set_redelivery(caller, tenant, Some(RedeliverySchedule::standard())).await.unwrap_err(),
        operator.set_redelivery(caller, tenant, None).await.unwrap_err(),
        operator.set_read_only_portals_read_payloads(caller, tenant, true).await.unwrap_err(),
        operator.set_read_only_portals_read_payloads(caller, tenant, false).await.unwrap_err(),
        operator.link_workspace(caller, tenant, Some(ws("T1")), None).await.unwrap_err(),
        operator.unlink_workspace(caller, tenant, &ws("T1")).await.unwrap_err(),
        operator.set_agent(caller, tenant, url, secret).await.unwrap_err(),
        operator.pause_agent(caller, tenant, true).await.unwrap_err(),
        operator.create_install_link(caller, tenant, lifetime).await.unwrap_err(),
        operator.uninstall(caller, tenant, &ws("T1")).await.unwrap_err(),
        operator.rename_tenant(caller, tenant, TenantName::new("Acme II").unwrap()).await.unwrap_err(),
        operator.remove_agent(caller, tenant).await.unwrap_err(),
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
        .withf(|only, search, _| *only == Some(own()) && search.iter().map(TenantSearch::text).eq(["acme"]))
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![record(own())], next: None })));
    let search = TenantSearch::Anything(TenantName::new(" acme ").unwrap());
    let page = ports.build().tenants(&key(Some(own()), true), vec![search], &PageRequest::default()).await;
    assert_eq!(page.unwrap().items, vec![record(own())]);
}

// --- tenants -----------------------------------------------------------------------------

#[tokio::test]
async fn only_a_writer_for_every_tenant_deletes_one_and_another_tenant_is_unknown_first() {
    let operator = Ports::new().untouched().build();
    assert_eq!(
        operator.delete_tenant(&key(Some(own()), false), other()).await,
        Err(OperatorError::UnknownTenant(other())),
        "out of scope: unknown, before the permission is even asked"
    );
    for caller in [key(Some(own()), false), key(None, true), key(Some(own()), true)] {
        let error = operator.delete_tenant(&caller, own()).await.unwrap_err();
        assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
    }
}

#[tokio::test]
async fn deleting_a_tenant_removes_its_directory_with_an_audit_entry_then_its_receipts_in_batches() {
    let mut ports = Ports::new().with_own_tenant();
    let mut seq = Sequence::new();
    ports
        .tenants
        .expect_delete()
        .withf(|tenant, audit| {
            *tenant == own()
                && audit.action == AuditAction::TenantDelete
                && audit.tenant == Some(own())
                && audit.target.as_deref() == Some("Acme")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| ready(Ok(true)));
    purge_recorded(&mut ports, &mut seq, "started");
    let batches = std::sync::Arc::new(std::sync::Mutex::new(vec![Ok(7), Ok(10_000), Ok(10_000)]));
    purges(&mut ports, &mut seq, batches);
    purge_recorded(&mut ports, &mut seq, "20007 receipts deleted");
    let offboarded = ports.build().delete_tenant(&key(None, false), own()).await.unwrap();
    assert_eq!(
        offboarded,
        super::tenants::Offboarded { receipts: 20_007, receipts_left: false },
        "until a batch comes back short"
    );
}

/// The tenant's purge audited with `target`, next in `seq`.
fn purge_recorded(ports: &mut Ports, seq: &mut Sequence, target: &'static str) {
    ports
        .audit
        .expect_record()
        .withf(move |e| {
            e.action == AuditAction::TenantPurge
                && e.tenant == Some(own())
                && e.target.as_deref() == Some(target)
        })
        .times(1)
        .in_sequence(seq)
        .returning(|_| ready(Ok(())));
}

/// The tenant's receipts purged a batch at a time, each answering the last of `batches`.
fn purges(
    ports: &mut Ports,
    seq: &mut Sequence,
    batches: std::sync::Arc<std::sync::Mutex<Vec<Result<u64, StorageError>>>>,
) {
    let count = batches.lock().unwrap().len();
    ports
        .tenants
        .expect_purge_receipts()
        .withf(|tenant, batch| *tenant == own() && *batch == super::tenants::PURGE_BATCH)
        .times(count)
        .in_sequence(seq)
        .returning(move |_, _| ready(batches.lock().unwrap().pop().unwrap()));
}

#[tokio::test]
async fn a_tenant_whose_receipts_stop_going_is_still_answered_deleted_with_receipts_left_and_why_audited() {
    let mut ports = Ports::new().with_own_tenant();
    let mut seq = Sequence::new();
    ports.tenants.expect_delete().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(true)));
    purge_recorded(&mut ports, &mut seq, "started");
    let down = StorageError::Unavailable("no primary".into());
    let batches = std::sync::Arc::new(std::sync::Mutex::new(vec![Err(down), Ok(10_000)]));
    purges(&mut ports, &mut seq, batches);
    purge_recorded(&mut ports, &mut seq, "stopped: storage unavailable: no primary");
    let offboarded = ports.build().delete_tenant(&key(None, false), own()).await;
    assert_eq!(
        offboarded,
        Ok(super::tenants::Offboarded { receipts: 10_000, receipts_left: true }),
        "deleted: what went before the failure counted, the rest left to `receipts prune`"
    );
}

#[tokio::test]
async fn a_purge_that_finished_is_answered_with_nothing_left_although_its_audit_entry_failed() {
    let mut ports = Ports::new().with_own_tenant();
    let mut seq = Sequence::new();
    ports.tenants.expect_delete().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(true)));
    purge_recorded(&mut ports, &mut seq, "started");
    let batches = std::sync::Arc::new(std::sync::Mutex::new(vec![Ok(3)]));
    purges(&mut ports, &mut seq, batches);
    ports
        .audit
        .expect_record()
        .withf(|e| e.target.as_deref() == Some("3 receipts deleted"))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_| ready(Err(StorageError::Unavailable("no primary".into()))));
    ports.audit.expect_record().returning(|_| ready(Ok(())));
    let offboarded = ports.build().delete_tenant(&key(None, false), own()).await;
    assert_eq!(
        offboarded,
        Ok(super::tenants::Offboarded { receipts: 3, receipts_left: false }),
        "the receipts are gone: the answer says what the purge did, not whether its record was written"
    );
}

#[tokio::test]
async fn a_tenant_deleted_meanwhile_is_unknown_and_nothing_is_purged() {
    let mut ports = Ports::new().with_own_tenant();
    ports.tenants.expect_delete().times(1).returning(|_, _| ready(Ok(false)));
    ports.tenants.expect_purge_receipts().never();
    assert_eq!(ports.build().delete_tenant(&cli(), own()).await, Err(OperatorError::UnknownTenant(own())));
}

#[tokio::test]
async fn renaming_a_tenant_audits_the_old_and_the_new_name() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .tenants
        .expect_rename()
        .withf(|tenant, name, audit| {
            *tenant == own()
                && name.as_str() == "Acme II"
                && audit.action == AuditAction::TenantRename
                && audit.target.as_deref() == Some("Acme -> Acme II")
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(())));
    let renamed = ports
        .build()
        .rename_tenant(&key(Some(own()), false), own(), TenantName::new("Acme II").unwrap())
        .await;
    assert_eq!(renamed.unwrap().name, "Acme II");
}

#[tokio::test]
async fn redelivery_is_set_with_its_schedule_in_the_operators_words_and_off_as_off() {
    let mut ports = Ports::new().with_own_tenant();
    let schedule = RedeliverySchedule::parse("5s,5m,30m").unwrap();
    let expected = schedule.clone();
    ports
        .tenants
        .expect_set_redelivery()
        .withf(move |tenant, set, audit| {
            *tenant == own()
                && set.as_ref() == Some(&expected)
                && audit.action == AuditAction::TenantRedelivery
                && audit.tenant == Some(own())
                && audit.target.as_deref() == Some("5s,5m,30m")
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(())));
    ports
        .tenants
        .expect_set_redelivery()
        .withf(|tenant, set, audit| {
            *tenant == own()
                && set.is_none()
                && audit.action == AuditAction::TenantRedelivery
                && audit.target.as_deref() == Some("off")
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(())));
    let operator = ports.build();
    operator.set_redelivery(&key(Some(own()), false), own(), Some(schedule)).await.unwrap();
    operator.set_redelivery(&cli(), own(), None).await.unwrap();
}

#[tokio::test]
async fn a_read_only_key_may_not_turn_redelivery_on_or_off_and_nothing_is_written() {
    let operator = Ports::new().untouched().build();
    for schedule in [Some(RedeliverySchedule::standard()), None] {
        for caller in [key(Some(own()), true), key(None, true)] {
            let error = operator.set_redelivery(&caller, own(), schedule.clone()).await.unwrap_err();
            assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
        }
    }
}

#[tokio::test]
async fn a_tenants_allowance_for_its_read_only_portals_is_set_by_a_writer_and_audited_as_on_or_off() {
    let mut ports = Ports::new().with_own_tenant();
    for (on, word) in [(true, "on"), (false, "off")] {
        ports
            .tenants
            .expect_set_read_only_portals_read_payloads()
            .withf(move |tenant, set, audit| {
                *tenant == own()
                    && *set == on
                    && audit.action == AuditAction::TenantReadOnlyPortalsReadPayloads
                    && audit.tenant == Some(own())
                    && audit.target.as_deref() == Some(word)
            })
            .times(1)
            .returning(|_, _, _| ready(Ok(())));
    }
    let operator = ports.build();
    // The tenant's own writing key, as for its other settings; and the command line.
    operator.set_read_only_portals_read_payloads(&key(Some(own()), false), own(), true).await.unwrap();
    operator.set_read_only_portals_read_payloads(&cli(), own(), false).await.unwrap();
}

#[tokio::test]
async fn a_read_only_key_may_not_change_the_allowance_even_one_that_would_gain_by_it() {
    let operator = Ports::new().untouched().build();
    for caller in [key(Some(own()), true), payload_reader(Some(own()), true), payload_reader(None, true)] {
        for on in [true, false] {
            let error = operator.set_read_only_portals_read_payloads(&caller, own(), on).await.unwrap_err();
            assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
        }
    }
}

#[tokio::test]
async fn removing_an_agent_that_is_not_set_says_so() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .agents
        .expect_remove()
        .withf(|tenant, audit| *tenant == own() && audit.action == AuditAction::AgentRemove)
        .times(1)
        .returning(|_, _| ready(Ok(false)));
    assert_eq!(ports.build().remove_agent(&cli(), own()).await, Err(OperatorError::NoAgent(own())));
}

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
async fn an_idempotent_repeat_returns_the_first_tenant_and_a_reused_or_busy_key_is_refused() {
    for (answer, expected) in [
        (Created::Repeated(record(own())), Ok((own(), false))),
        (Created::KeyReused, Err(OperatorError::IdempotencyKeyReused)),
        (Created::InProgress, Err(OperatorError::IdempotencyKeyInUse)),
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
async fn a_scoped_key_links_no_workspace_by_id_and_ids_must_be_slacks() {
    let operator = Ports::new().with_own_tenant().never_writes().build();
    let error =
        operator.link_workspace(&key(Some(own()), false), own(), Some(ws("T1")), None).await.unwrap_err();
    assert!(
        matches!(error, OperatorError::Forbidden(reason) if reason.contains("install link")),
        "{error:?}"
    );
    let error = operator.link_workspace(&key(Some(own()), false), other(), Some(ws("T1")), None).await;
    assert_eq!(error.unwrap_err(), OperatorError::UnknownTenant(other()), "another tenant is unknown first");
    for (team, enterprise, field) in [
        (Some("E0123ABCD"), None, "team_id"),
        (Some("t0123abcd"), None, "team_id"),
        (Some("T"), None, "team_id"),
        (None, Some("T0123ABCD"), "enterprise_id"),
        (Some("T1"), Some("Egrid"), "enterprise_id"),
    ] {
        let error = operator
            .link_workspace(&key(None, false), own(), team.map(ws), enterprise.map(ws))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, OperatorError::Invalid(e) if e.what == field),
            "{team:?} {enterprise:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn relinking_a_team_inside_another_enterprise_is_refused_not_ignored() {
    let mut ports = Ports::new().with_own_tenant();
    ports.workspaces.expect_link().times(2).returning(|_, _, _, _| {
        ready(Ok(Linked::Already(LinkedWorkspace {
            platform: Platform::Slack,
            workspace: WorkspaceRef::operator(Some(ws("T1")), Some(ws("E1"))).unwrap(),
            linked_at: now(),
        })))
    });
    let operator = ports.build();
    let error = operator.link_workspace(&cli(), own(), Some(ws("T1")), Some(ws("E2"))).await.unwrap_err();
    assert!(matches!(error, OperatorError::LinkedOtherwise(_)), "{error:?}");
    let same = operator.link_workspace(&cli(), own(), Some(ws("T1")), Some(ws("E1"))).await.unwrap();
    assert!(!same.new, "the same link again changes nothing");
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
async fn setting_an_agent_checks_the_destination_first_and_audits_the_whole_url_without_credentials() {
    let mut ports = Ports::new().with_own_tenant();
    let mut seq = Sequence::new();
    ports.destinations.expect_check().times(1).in_sequence(&mut seq).returning(|_| ready(Ok(())));
    ports
        .agents
        .expect_set()
        .withf(|_, _, _, audit| {
            audit.target.as_deref() == Some("https://agent.example/slack?tenant=globex&v=2")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _, _, _| ready(Ok(())));
    let url = AgentUrl::parse("https://user:pw@agent.example/slack?tenant=globex&v=2").unwrap();
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
        redeliveries: 0,
        gave_up_at: None,
        first_delivery: None,
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
        ports.jobs.expect_attempts().returning(|_| ready(Ok(vec![])));
        ports.ledger.expect_attempts().returning(|_| ready(Ok(vec![])));
        let report =
            ports.build().event(&key(Some(own()), true), own(), ExternalEventId::new("Ev1").unwrap()).await;
        assert_eq!(report.map(|r| (r.status, r.payload_kept)), Ok((status, true)));
    }
    let mut ports = Ports::new().with_own_tenant();
    ports.ledger.expect_receipt().returning(|_| ready(Ok(None)));
    let error = ports.build().event(&cli(), own(), ExternalEventId::new("Ev9").unwrap()).await.unwrap_err();
    assert_eq!(error, OperatorError::NotFound { what: "event", id: "Ev9".into() });
}

fn found(tenant: TenantId, name: &str, receipt: Receipt) -> FoundReceipt {
    let mut receipt = receipt;
    receipt.key.tenant = tenant;
    FoundReceipt { tenant_name: name.into(), receipt }
}

#[tokio::test]
async fn an_event_id_is_searched_in_every_tenant_for_a_key_for_every_tenant_with_each_status() {
    let mut ports = Ports::new();
    ports.tenants.expect_get().never();
    let mut handled = receipt(30);
    handled.handled_at = Some(now());
    ports
        .ledger
        .expect_find()
        .withf(|tenant, platform, id| {
            tenant.is_none() && *platform == Platform::Slack && id.as_str() == "Ev0123ABCD"
        })
        .times(1)
        .returning(move |_, _, _| {
            ready(Ok(vec![found(own(), "Acme", handled.clone()), found(other(), "Globex", receipt(601))]))
        });
    let matches = ports
        .build()
        .find_events(&key(None, true), &ExternalEventId::new("Ev0123ABCD").unwrap())
        .await
        .unwrap();
    let seen: Vec<_> =
        matches.iter().map(|m| (m.receipt.key.tenant, m.tenant_name.as_str(), m.status.as_str())).collect();
    assert_eq!(seen, vec![(own(), "Acme", "handled"), (other(), "Globex", "stranded")]);
}

#[tokio::test]
async fn a_scoped_key_searches_its_own_tenant_only_and_never_sees_another_tenants_match() {
    let mut ports = Ports::new();
    ports
        .ledger
        .expect_find()
        .withf(|tenant, _, _| *tenant == Some(own()))
        .times(1)
        // An adapter breaking its contract: the other tenant's row is still not shown.
        .returning(|_, _, _| {
            ready(Ok(vec![found(own(), "Acme", receipt(5)), found(other(), "Globex", receipt(5))]))
        });
    let matches = ports
        .build()
        .find_events(&key(Some(own()), true), &ExternalEventId::new("Ev1").unwrap())
        .await
        .unwrap();
    let seen: Vec<_> = matches.iter().map(|m| (m.receipt.key.tenant, m.status.as_str())).collect();
    assert_eq!(seen, vec![(own(), "in_flight")]);
}

#[tokio::test]
async fn a_search_that_finds_nothing_is_an_empty_answer_and_a_storage_failure_is_an_error() {
    let mut ports = Ports::new();
    ports.ledger.expect_find().times(1).returning(|_, _, _| ready(Ok(vec![])));
    let matches = ports.build().find_events(&cli(), &ExternalEventId::new("Ev9").unwrap()).await;
    assert_eq!(matches, Ok(vec![]));
    let mut ports = Ports::new();
    ports.ledger.expect_find().returning(|_, _, _| ready(Err(StorageError::Unavailable("down".into()))));
    let error = ports.build().find_events(&cli(), &ExternalEventId::new("Ev9").unwrap()).await.unwrap_err();
    assert!(matches!(error, OperatorError::Storage(_)), "{error:?}");
}

#[tokio::test]
async fn a_stranded_listing_asks_for_receipts_older_than_the_threshold() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .ledger
        .expect_list()
        .withf(|tenant, filter, _| {
            *tenant == Some(own())
                && filter.state == Some(EventState::Stranded)
                && filter.stranded_before == now() - chrono::Duration::seconds(600)
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![], next: None })));
    let page = ports
        .build()
        .events(&cli(), Some(own()), Some(EventState::Stranded), Default::default(), &PageRequest::default())
        .await;
    assert!(page.unwrap().items.is_empty());
}

#[tokio::test]
async fn an_events_total_counts_one_past_the_cap_with_the_listings_filter_and_says_more_than_beyond_it() {
    for (counted, total) in [
        (0, Total { count: 0, lower_bound: false }),
        (Total::CAP, Total { count: Total::CAP, lower_bound: false }),
        (Total::CAP + 1, Total { count: Total::CAP, lower_bound: true }),
    ] {
        let mut ports = Ports::new().with_own_tenant();
        ports
            .ledger
            .expect_count()
            .withf(|tenant, filter, up_to| {
                *tenant == Some(own())
                    && filter.state == Some(EventState::Failed)
                    && filter.since == Some(now())
                    && filter.event_type.as_deref() == Some("message")
                    && *up_to == Total::CAP + 1
            })
            .times(1)
            .returning(move |_, _, _| ready(Ok(counted)));
        let query = super::events::EventQuery {
            since: Some(now()),
            until: None,
            event_type: Some(EventType::new("message").unwrap()),
        };
        let scoped = key(Some(own()), true);
        let got = ports.build().events_total(&scoped, None, Some(EventState::Failed), query).await.unwrap();
        assert_eq!(got, total, "{counted} counted");
    }
}

#[tokio::test]
async fn a_tenant_listings_total_counts_the_callers_tenants_found_by_the_search_one_past_the_cap() {
    let mut ports = Ports::new();
    let search = vec![TenantSearch::Anything(TenantName::new("acme").unwrap())];
    let expected = search.clone();
    ports
        .tenants
        .expect_count()
        .withf(move |only, asked, up_to| {
            *only == Some(own()) && *asked == expected && *up_to == Total::CAP + 1
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(Total::CAP + 1)));
    let total = ports.build().tenants_total(&key(Some(own()), true), search).await.unwrap();
    assert_eq!(total, Total { count: Total::CAP, lower_bound: true });
}

#[tokio::test]
async fn a_scoped_key_counts_no_other_tenants_events() {
    let operator = Ports::new().with_own_tenant().build();
    let error = operator
        .events_total(&key(Some(own()), true), Some(other()), Some(EventState::Failed), Default::default())
        .await
        .unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(other()));
}

#[tokio::test]
async fn an_events_history_is_its_live_dispatch_then_each_replay() {
    let mut ports = Ports::new().with_own_tenant();
    let failed_at = now() - chrono::Duration::seconds(300);
    let mut handled = receipt(900);
    handled.handled_at = Some(now() - chrono::Duration::seconds(10));
    handled.replays = 1;
    ports
        .ledger
        .expect_receipt()
        .returning(move |_| ready(Ok(Some(ReceiptRecord { receipt: handled.clone(), payload_kept: false }))));
    let job = ReplayJobId::generate();
    ports.jobs.expect_attempts().returning(move |_| {
        ready(Ok(vec![ReplayAttempt {
            job,
            started_at: Some(now() - chrono::Duration::seconds(11)),
            ended_at: Some(now() - chrono::Duration::seconds(10)),
            outcome: Some("handled".into()),
            detail: Some("sent again".into()),
            failure_before: Some(Failure { reason: "agent answered HTTP 500".into(), at: failed_at }),
        }]))
    });
    ports.ledger.expect_attempts().returning(|_| ready(Ok(vec![])));
    let report = ports.build().event(&cli(), own(), ExternalEventId::new("Ev1").unwrap()).await.unwrap();
    let summary: Vec<_> = report
        .attempts
        .iter()
        .map(|a| (a.job, a.outcome.as_str(), a.ended_at, a.detail.as_deref()))
        .collect();
    assert_eq!(
        summary,
        [
            (None, "failed", Some(failed_at), Some("agent answered HTTP 500")),
            (Some(job), "handled", Some(now() - chrono::Duration::seconds(10)), Some("sent again")),
        ],
        "the live dispatch failed (what the replay found), then the replay handled it"
    );
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
    async fn a_replay_job_is_written_with_its_events_and_audited_with_what_it_selected() {
        let mut ports = Ports::new().with_own_tenant();
        ports
            .jobs
            .expect_create()
            .withf(|job, audit| {
                job.tenant == own()
                    && job.events.iter().map(ExternalEventId::as_str).collect::<Vec<_>>() == ["Ev1"]
                    && job.selection == "event Ev1"
                    && audit.action == AuditAction::EventsReplay
                    && audit.target.as_deref().is_some_and(|t| t.ends_with(": event Ev1 (1 event)"))
            })
            .times(1)
            .returning(|_, _| ready(Ok(())));
        let selection = ReplaySelection::Event(ExternalEventId::new("Ev1").unwrap());
        let job = ports.build().start_replay(&cli(), &stored(vec![]), own(), &selection, None).await.unwrap();
        assert_eq!(
            (job.state(), job.total, job.done),
            (JobState::Queued, 1, 0),
            "a named event is in it even without a receipt"
        );
    }

    #[tokio::test]
    async fn a_read_only_key_may_dry_run_but_not_start_a_replay() {
        let operator = Ports::new().with_own_tenant().never_writes().build();
        let read_only = key(Some(own()), true);
        let selection = ReplaySelection::FailedSince(now());
        let kept = ReceiptRecord { receipt: receipt(60), payload_kept: true };
        let report = operator
            .dry_run_replay(&read_only, &inbound(), &stored(vec![kept]), own(), &selection)
            .await
            .unwrap();
        assert_eq!(report[0].outcome, ReplayOutcome::WouldReplay);
        let error =
            operator.start_replay(&read_only, &stored(vec![]), own(), &selection, None).await.unwrap_err();
        assert!(matches!(error, OperatorError::Forbidden(_)), "{error:?}");
    }

    /// A started job of `total` events, one done, asked for by `by`.
    fn asked_by(ports: &mut Ports, job: ReplayJobId, by: &Caller, total: u32) {
        let owner = by.clone();
        ports.jobs.expect_get().returning(move |_, _| {
            ready(Ok(Some(ReplayJob {
                id: job,
                tenant: own(),
                selection: "failed since x".into(),
                requested_by: owner.clone(),
                created_at: now(),
                started_at: Some(now()),
                finished_at: None,
                total,
                done: 1,
                succeeded: 0,
                events: vec![],
            })))
        });
    }

    /// The key behind `key(…)`, as the key store has it: revoked or not.
    fn stored_key(ports: &mut Ports, revoked: bool) {
        let id: KeyId = "5d9f7c2e-6a1b-4f3e-8c2d-1a2b3c4d5e6f".parse().unwrap();
        ports
            .keys
            .expect_get()
            .returning(move |asked| ready(Ok((asked == id).then(|| key_summary(id, Some(own()), revoked)))));
    }

    #[tokio::test]
    async fn a_job_records_each_pending_events_outcome_on_behalf_of_who_asked_then_finishes() {
        let mut ports = Ports::new();
        let job = ReplayJobId::generate();
        let asked = key(Some(own()), false);
        asked_by(&mut ports, job, &asked, 2);
        stored_key(&mut ports, false);
        let mut seq = Sequence::new();
        ports
            .jobs
            .expect_pending()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| ready(Ok(vec![(1, ExternalEventId::new("Ev2").unwrap())])));
        let by = asked.clone();
        ports
            .jobs
            .expect_record()
            .withf(move |tenant, id, position, result, detail, audit| {
                *tenant == own()
                    && *id == job
                    && *position == 1
                    && result.outcome == ReplayOutcome::Unknown
                    && detail.starts_with("refused: no receipt")
                    && audit.action == AuditAction::EventReplay
                    && audit.caller == by
                    && audit.target.as_deref().is_some_and(|t| t.starts_with("Ev2: unknown"))
            })
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _, _, _, _, _| ready(Ok(())));
        ports.jobs.expect_hold().times(1).in_sequence(&mut seq).returning(|_, _, _| ready(Ok(())));
        ports.jobs.expect_finish().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(())));
        ports
            .build()
            .run_replay_job(&inbound(), &stored(vec![]), own(), job, Duration::from_secs(120))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_job_whose_key_was_revoked_sends_nothing_more_and_records_the_rest_as_not_sent() {
        let mut ports = Ports::new();
        let job = ReplayJobId::generate();
        let asked = key(Some(own()), false);
        asked_by(&mut ports, job, &asked, 3);
        stored_key(&mut ports, true);
        ports.jobs.expect_pending().returning(|_, _| {
            ready(Ok(vec![
                (1, ExternalEventId::new("Ev2").unwrap()),
                (2, ExternalEventId::new("Ev3").unwrap()),
            ]))
        });
        ports.jobs.expect_record().never();
        ports.jobs.expect_finish().never();
        let by = asked.clone();
        ports
            .jobs
            .expect_refuse_pending()
            .withf(move |tenant, id, outcome, audit| {
                *tenant == own()
                    && *id == job
                    && matches!(outcome, ReplayOutcome::NotSent(why) if why.ends_with("was revoked"))
                    && audit.action == AuditAction::EventReplay
                    && audit.caller == by
                    && audit.target.as_deref().is_some_and(|t| t.starts_with("2 events left: not sent: "))
            })
            .times(1)
            .returning(|_, _, _, _| ready(Ok(())));
        // `inbound()` refuses any dispatch: nothing is sent.
        ports
            .build()
            .run_replay_job(&inbound(), &stored(vec![]), own(), job, Duration::from_secs(120))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_job_whose_key_is_gone_with_its_tenant_or_expired_stops_too() {
        let expired = KeySummary { expires_at: Some(now()), ..key_summary(KeyId::generate(), None, false) };
        for (found, why) in [(None, "no longer exists"), (Some(expired), "has expired")] {
            let mut ports = Ports::new();
            let job = ReplayJobId::generate();
            asked_by(&mut ports, job, &key(Some(own()), false), 2);
            ports.keys.expect_get().returning(move |_| ready(Ok(found.clone())));
            ports
                .jobs
                .expect_pending()
                .returning(|_, _| ready(Ok(vec![(1, ExternalEventId::new("Ev2").unwrap())])));
            ports
                .jobs
                .expect_refuse_pending()
                .withf(move |_, _, outcome, _| matches!(outcome, ReplayOutcome::NotSent(said) if said.ends_with(why)))
                .times(1)
                .returning(|_, _, _, _| ready(Ok(())));
            ports
                .build()
                .run_replay_job(&inbound(), &stored(vec![]), own(), job, Duration::from_secs(120))
                .await
                .unwrap();
        }
    }
}

// --- audit and keys ----------------------------------------------------------------------

#[tokio::test]
async fn a_scoped_key_reads_only_its_tenants_audit_entries() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .audit
        .expect_list()
        .withf(|tenant, _, _| *tenant == Some(own()))
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![], next: None })));
    let operator = ports.build();
    let scoped = key(Some(own()), true);
    let all = AuditFilter::default();
    operator.audit(&scoped, None, &all, &PageRequest::default()).await.unwrap();
    let error = operator.audit(&scoped, Some(other()), &all, &PageRequest::default()).await.unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(other()));
}

#[tokio::test]
async fn a_deleted_tenants_audit_entries_stay_readable_to_a_key_for_every_tenant_only() {
    let mut ports = Ports::new().with_own_tenant();
    ports.tenants.expect_was_deleted().returning(|id| ready(Ok(id == other())));
    ports
        .audit
        .expect_list()
        .withf(|tenant, _, _| *tenant == Some(other()))
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![], next: None })));
    let operator = ports.build();
    let all = AuditFilter::default();
    operator.audit(&key(None, true), Some(other()), &all, &PageRequest::default()).await.unwrap();
    let never: TenantId = "3b0c8f2e-9d4a-4f6b-8e1c-2a7d5b9c0e13".parse().unwrap();
    let error =
        operator.audit(&key(None, false), Some(never), &all, &PageRequest::default()).await.unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(never), "a tenant that never was is still unknown");
    let scoped = operator.audit(&key(Some(own()), true), Some(other()), &all, &PageRequest::default()).await;
    assert_eq!(scoped.unwrap_err(), OperatorError::UnknownTenant(other()), "not to a scoped key");
}

#[tokio::test]
async fn an_audit_filter_reaches_the_trail_as_asked_with_the_callers_scope() {
    let mut ports = Ports::new().with_own_tenant();
    let filter = AuditFilter {
        action: Some(AuditAction::AgentPause),
        key: Some("5d9f7c2e-6a1b-4f3e-8c2d-1a2b3c4d5e6f".parse().unwrap()),
        since: Some(now()),
        until: Some(now() + chrono::Duration::hours(1)),
    };
    let expected = filter.clone();
    ports
        .audit
        .expect_list()
        .withf(move |tenant, asked, _| *tenant == Some(own()) && *asked == expected)
        .times(1)
        .returning(|_, _, _| ready(Ok(Page { items: vec![], next: None })));
    let operator = ports.build();
    operator.audit(&key(Some(own()), true), None, &filter, &PageRequest::default()).await.unwrap();
}

#[tokio::test]
async fn an_audit_filter_whose_until_is_before_its_since_is_refused_before_anything_is_read() {
    let operator = Ports::new().untouched().build();
    let filter = AuditFilter {
        since: Some(now()),
        until: Some(now() - chrono::Duration::seconds(1)),
        ..AuditFilter::default()
    };
    let error = operator.audit(&key(None, true), None, &filter, &PageRequest::default()).await.unwrap_err();
    assert_eq!(error, OperatorError::Invalid(ValidationError::new("until", "must not be before since")));
}

#[tokio::test]
async fn only_an_actor_that_may_do_everything_manages_keys() {
    let operator = Ports::new().untouched().build();
    for weaker in [key(None, true), key(Some(own()), false), key(Some(own()), true)] {
        let scope = KeyScope { tenant: None, read_only: false, read_payloads: false };
        let error = operator.create_key(&weaker, KeyName::new("x").unwrap(), scope, None);
        assert!(matches!(error.await, Err(OperatorError::Forbidden(_))));
        assert!(matches!(
            operator.revoke_key(&weaker, KeyId::generate()).await,
            Err(OperatorError::Forbidden(_))
        ));
        assert!(matches!(operator.keys(&weaker).await, Err(OperatorError::Forbidden(_))));
    }
}

#[tokio::test]
async fn a_key_for_every_tenant_makes_a_key_that_expires_and_the_audit_names_it() {
    let mut ports = Ports::new().with_own_tenant();
    let expires = now() + chrono::Duration::days(90);
    ports
        .keys
        .expect_create()
        .withf(move |_, name, scope, at, audit| {
            name.as_str() == "portal"
                && *scope == KeyScope { tenant: Some(own()), read_only: true, read_payloads: false }
                && *at == Some(expires)
                && audit.action == AuditAction::KeyCreate
                && audit.tenant == Some(own())
                && audit.target.as_deref().is_some_and(|t| t.ends_with(" portal"))
        })
        .times(1)
        .returning(|_, _, _, _, _| ready(Ok(KeySecret::new("dmk_x_y".into()))));
    let scope = KeyScope { tenant: Some(own()), read_only: true, read_payloads: false };
    let (made, secret) = ports
        .build()
        .create_key(&key(None, false), KeyName::new("portal").unwrap(), scope, Some(expires))
        .await
        .unwrap();
    assert_eq!((made.expires_at, made.scope, secret.expose()), (Some(expires), scope, "dmk_x_y"));
}

fn key_summary(id: KeyId, tenant: Option<TenantId>, revoked: bool) -> KeySummary {
    KeySummary {
        id,
        name: "portal".into(),
        scope: KeyScope { tenant, read_only: true, read_payloads: false },
        created_at: now(),
        expires_at: None,
        last_used_at: None,
        revoked_at: revoked.then(now),
    }
}

#[tokio::test]
async fn a_sign_in_link_is_made_for_a_scoped_key_for_15_minutes_and_audited_under_its_tenant() {
    let mut ports = Ports::new();
    let id = KeyId::generate();
    ports
        .keys
        .expect_get()
        .returning(move |asked| ready(Ok((asked == id).then(|| key_summary(id, Some(own()), false)))));
    ports
        .keys
        .expect_sign_in_link()
        .withf(move |key, at, audit| {
            *key == id
                && *at == now() + chrono::Duration::minutes(15)
                && audit.action == AuditAction::SignInLinkCreate
                && audit.tenant == Some(own())
                && audit.target == Some(id.to_string())
        })
        .times(1)
        .returning(|_, _, _| ready(Ok(Some(KeySecret::new("token".into())))));
    let link = ports.build().create_sign_in_link(&key(None, false), id).await.unwrap();
    assert_eq!(
        (link.token.expose(), link.expires_at, link.key.id),
        ("token", now() + chrono::Duration::minutes(15), id)
    );
    assert_eq!(link.url, "https://admin.example/console/sign-in/token", "whole, to paste to a customer");
}

#[tokio::test]
async fn no_sign_in_link_is_made_without_the_consoles_address() {
    let id = KeyId::generate();
    let mut ports = Ports::new().untouched();
    ports.keys.expect_get().returning(move |_| ready(Ok(Some(key_summary(id, Some(own()), false)))));
    let mut operator = ports.build();
    operator.settings.console_base_url = None;
    assert!(!operator.sign_in_links_on());
    let refused = operator.create_sign_in_link(&cli(), id).await.unwrap_err();
    assert_eq!(refused, OperatorError::SignInLinksOff, "and nothing written");
}

#[tokio::test]
async fn no_sign_in_link_for_a_key_for_every_tenant_a_revoked_key_or_a_weaker_caller() {
    let (every, revoked) = (KeyId::generate(), KeyId::generate());
    let mut ports = Ports::new().untouched();
    ports.keys.expect_get().returning(move |asked| {
        let keys = [key_summary(every, None, false), key_summary(revoked, Some(own()), true)];
        ready(Ok(keys.into_iter().find(|k| k.id == asked)))
    });
    let operator = ports.build();
    let refused = operator.create_sign_in_link(&cli(), every).await.unwrap_err();
    assert!(matches!(refused, OperatorError::Refused { what: "key", .. }), "{refused:?}");
    let gone = operator.create_sign_in_link(&cli(), revoked).await.unwrap_err();
    assert!(matches!(gone, OperatorError::NotFound { what: "key", .. }), "{gone:?}");
    let unknown = operator.create_sign_in_link(&cli(), KeyId::generate()).await.unwrap_err();
    assert!(matches!(unknown, OperatorError::NotFound { what: "key", .. }), "{unknown:?}");
    for weaker in [key(None, true), key(Some(own()), false)] {
        let forbidden = operator.create_sign_in_link(&weaker, revoked).await.unwrap_err();
        assert!(matches!(forbidden, OperatorError::Forbidden(_)), "{forbidden:?}");
    }
}

#[tokio::test]
async fn a_scoped_keys_revocation_is_audited_under_its_tenant_and_a_key_for_every_tenants_under_none() {
    let (scoped, every) = (KeyId::generate(), KeyId::generate());
    let mut ports = Ports::new();
    ports.keys.expect_get().returning(move |asked| {
        let keys = [key_summary(scoped, Some(own()), false), key_summary(every, None, false)];
        ready(Ok(keys.into_iter().find(|k| k.id == asked)))
    });
    for (id, tenant) in [(scoped, Some(own())), (every, None)] {
        ports
            .keys
            .expect_revoke()
            .withf(move |key, audit| {
                *key == id
                    && audit.action == AuditAction::KeyRevoke
                    && audit.tenant == tenant
                    && audit.target == Some(id.to_string())
            })
            .times(1)
            .returning(|_, _| ready(Ok(true)));
    }
    let operator = ports.build();
    operator.revoke_key(&key(None, false), scoped).await.unwrap();
    operator.revoke_key(&key(None, false), every).await.unwrap();
    let unknown = operator.revoke_key(&key(None, false), KeyId::generate()).await.unwrap_err();
    assert!(matches!(unknown, OperatorError::NotFound { what: "key", .. }), "{unknown:?}");
}

#[tokio::test]
async fn a_key_that_would_already_have_expired_is_not_made() {
    let operator = Ports::new().untouched().build();
    let scope = KeyScope { tenant: None, read_only: false, read_payloads: false };
    let error =
        operator.create_key(&cli(), KeyName::new("x").unwrap(), scope, Some(now())).await.unwrap_err();
    assert!(matches!(error, OperatorError::Refused { what: "expires_at", .. }), "{error:?}");
}

#[tokio::test]
async fn a_key_for_a_tenant_that_does_not_exist_is_not_made() {
    let operator = Ports::new().with_own_tenant().never_writes().build();
    let scope = KeyScope { tenant: Some(other()), read_only: false, read_payloads: false };
    let error = operator.create_key(&cli(), KeyName::new("x").unwrap(), scope, None).await.unwrap_err();
    assert_eq!(error, OperatorError::UnknownTenant(other()));
}

/// The ledger's kept payload for `Ev1` of `own()`, read `times` times.
fn kept(ports: &mut Ports, times: usize, kept: Option<&'static str>) {
    ports
        .ledger
        .expect_payload()
        .withf(|key| key.tenant == own() && key.external_id.as_str() == "Ev1")
        .times(times)
        .returning(move |_| ready(Ok(kept.map(|json| KeptPayload::new(json.into())))));
}

const PAYLOAD: &str = r#"{"type":"event_callback","event":{"text":"hello"}}"#;

#[tokio::test]
async fn a_key_given_read_payloads_reads_the_kept_payload_and_one_not_given_it_never_has_it_read() {
    let ev1 = || ExternalEventId::new("Ev1").unwrap();
    for allowed in
        [payload_reader(None, false), payload_reader(None, true), payload_reader(Some(own()), false)]
    {
        let mut ports = Ports::new().with_own_tenant();
        kept(&mut ports, 1, Some(PAYLOAD));
        let shown = ports.build().event_payload(&allowed, own(), ev1()).await;
        assert_eq!(shown, Ok(PayloadView::Shown(KeptPayload::new(PAYLOAD.into()))), "{allowed:?}");
    }
    // Not given it: the payload is not even opened.
    for refused in [key(None, false), key(None, true), key(Some(own()), false), key(Some(own()), true)] {
        let mut ports = Ports::new().with_own_tenant();
        kept(&mut ports, 0, Some(PAYLOAD));
        let hidden = ports.build().event_payload(&refused, own(), ev1()).await;
        assert_eq!(hidden, Ok(PayloadView::Hidden(PayloadHidden::NotAllowed)), "{refused:?}");
    }
}

/// `own()` exists, letting its read-only portals read its payloads or not; any other tenant
/// does not.
fn own_tenant_allowing(ports: &mut Ports, allows: bool) {
    ports.tenants.expect_get().returning(move |id| {
        ready(Ok(
            (id == own()).then(|| TenantRecord { read_only_portals_read_payloads: allows, ..record(id) })
        ))
    });
}

#[tokio::test]
async fn a_read_only_portal_given_read_payloads_has_the_payload_opened_only_while_its_tenant_allows() {
    let ev1 = || ExternalEventId::new("Ev1").unwrap();
    let portal = payload_reader(Some(own()), true);
    // Not allowed by its tenant: hidden, saying so, and the payload port is never asked.
    let mut ports = Ports::new();
    own_tenant_allowing(&mut ports, false);
    kept(&mut ports, 0, Some(PAYLOAD));
    let hidden = ports.build().event_payload(&portal, own(), ev1()).await;
    assert_eq!(hidden, Ok(PayloadView::Hidden(PayloadHidden::NotAllowedByTenant)));
    // Allowed: the payload, read once.
    let mut ports = Ports::new();
    own_tenant_allowing(&mut ports, true);
    kept(&mut ports, 1, Some(PAYLOAD));
    let shown = ports.build().event_payload(&portal, own(), ev1()).await;
    assert_eq!(shown, Ok(PayloadView::Shown(KeptPayload::new(PAYLOAD.into()))));
    // Allowed, and none kept: told so, as any allowed caller.
    let mut ports = Ports::new();
    own_tenant_allowing(&mut ports, true);
    kept(&mut ports, 1, None);
    let none = ports.build().event_payload(&portal, own(), ev1()).await;
    assert_eq!(none, Ok(PayloadView::Hidden(PayloadHidden::NotKept)));
}

#[tokio::test]
async fn the_tenants_allowance_lifts_nothing_for_a_read_only_portal_not_given_read_payloads_or_another_tenant()
 {
    let ev1 = || ExternalEventId::new("Ev1").unwrap();
    let mut ports = Ports::new();
    own_tenant_allowing(&mut ports, true);
    ports.ledger.expect_payload().never();
    let operator = ports.build();
    let hidden = operator.event_payload(&key(Some(own()), true), own(), ev1()).await;
    assert_eq!(hidden, Ok(PayloadView::Hidden(PayloadHidden::NotAllowed)), "the key may not");
    let elsewhere = operator.event_payload(&payload_reader(Some(other()), true), own(), ev1()).await;
    assert_eq!(elsewhere, Err(OperatorError::UnknownTenant(own())), "another tenant's portal");
}

#[tokio::test]
async fn keys_that_may_read_payloads_read_them_whatever_the_tenant_allows_its_read_only_portals() {
    let ev1 = || ExternalEventId::new("Ev1").unwrap();
    for allowed in
        [payload_reader(None, false), payload_reader(None, true), payload_reader(Some(own()), false)]
    {
        let mut ports = Ports::new();
        own_tenant_allowing(&mut ports, false);
        kept(&mut ports, 1, Some(PAYLOAD));
        let shown = ports.build().event_payload(&allowed, own(), ev1()).await;
        assert_eq!(shown, Ok(PayloadView::Shown(KeptPayload::new(PAYLOAD.into()))), "{allowed:?}");
    }
}

#[tokio::test]
async fn an_allowed_caller_is_told_a_payload_is_not_kept_and_a_storage_failure_is_an_error() {
    let ev1 = || ExternalEventId::new("Ev1").unwrap();
    let mut ports = Ports::new().with_own_tenant();
    kept(&mut ports, 1, None);
    let hidden = ports.build().event_payload(&payload_reader(None, false), own(), ev1()).await;
    assert_eq!(hidden, Ok(PayloadView::Hidden(PayloadHidden::NotKept)));

    let mut ports = Ports::new().with_own_tenant();
    ports.ledger.expect_payload().returning(|_| ready(Err(StorageError::Unexpected("does not open".into()))));
    let failed = ports.build().event_payload(&cli(), own(), ev1()).await;
    assert_eq!(failed, Err(OperatorError::Storage(StorageError::Unexpected("does not open".into()))));
}

#[tokio::test]
async fn another_tenants_payload_is_unknown_to_a_portal_allowed_its_own_and_nothing_is_read() {
    let mut ports = Ports::new().with_own_tenant();
    ports.ledger.expect_payload().never();
    let error = ports
        .build()
        .event_payload(&payload_reader(Some(own()), false), other(), ExternalEventId::new("Ev1").unwrap())
        .await;
    assert_eq!(error, Err(OperatorError::UnknownTenant(other())));
}

#[tokio::test]
async fn a_read_only_portal_key_is_made_with_read_payloads_its_tenant_deciding_when_it_reads_them() {
    let mut ports = Ports::new().with_own_tenant();
    ports
        .keys
        .expect_create()
        .withf(|_, _, scope, _, audit| {
            *scope == KeyScope { tenant: Some(own()), read_only: true, read_payloads: true }
                && audit.target.as_deref().is_some_and(|t| t.ends_with(" portal (reads payloads)"))
        })
        .times(1)
        .returning(|_, _, _, _, _| ready(Ok(KeySecret::new("dmk_x_y".into()))));
    let scope = KeyScope { tenant: Some(own()), read_only: true, read_payloads: true };
    let (made, _) =
        ports.build().create_key(&cli(), KeyName::new("portal").unwrap(), scope, None).await.unwrap();
    assert_eq!(made.scope, scope);
}

#[tokio::test]
async fn a_key_made_to_read_payloads_says_so_in_its_audit_entry_and_one_not_says_nothing() {
    for (read_payloads, target_end) in [(true, " portal (reads payloads)"), (false, " portal")] {
        let mut ports = Ports::new().with_own_tenant();
        ports
            .keys
            .expect_create()
            .withf(move |_, _, scope, _, audit| {
                scope.read_payloads == read_payloads
                    && audit.action == AuditAction::KeyCreate
                    && audit.target.as_deref().is_some_and(|t| t.ends_with(target_end))
                    && (read_payloads || !audit.target.as_deref().unwrap_or_default().contains("payloads"))
            })
            .times(1)
            .returning(|_, _, _, _, _| ready(Ok(KeySecret::new("dmk_x_y".into()))));
        let scope = KeyScope { tenant: Some(own()), read_only: false, read_payloads };
        let (made, _) =
            ports.build().create_key(&cli(), KeyName::new("portal").unwrap(), scope, None).await.unwrap();
        assert_eq!(made.scope.read_payloads, read_payloads);
    }
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

#[tokio::test]
async fn an_events_history_shows_every_attempt_on_record_with_what_the_agent_answered() {
    let mut ports = Ports::new().with_own_tenant();
    let at = |ago_ms: i64| now() - chrono::Duration::milliseconds(ago_ms);
    let mut handled = receipt(900);
    handled.handled_at = Some(at(1_000));
    handled.failure = Some(Failure { reason: "agent answered HTTP 503".into(), at: at(299_000) });
    handled.replays = 2;
    ports
        .ledger
        .expect_receipt()
        .returning(move |_| ready(Ok(Some(ReceiptRecord { receipt: handled.clone(), payload_kept: true }))));
    let job = ReplayJobId::generate();
    ports.jobs.expect_attempts().returning(move |_| {
        ready(Ok(vec![ReplayAttempt {
            job,
            started_at: Some(at(120_500)),
            ended_at: Some(at(119_000)),
            outcome: Some("failed".into()),
            detail: Some("agent answered HTTP 500".into()),
            failure_before: Some(Failure { reason: "agent answered HTTP 503".into(), at: at(299_000) }),
        }]))
    });
    let attempt =
        move |started: i64, ended: i64, replay: bool, status: Option<u16>, failure: Option<FailureKind>| {
            AttemptRecord {
                started_at: at(started),
                ended_at: at(ended),
                replay,
                status,
                failure,
                reason: failure.map(|_| format!("agent answered HTTP {}", status.unwrap_or(0))),
                answer: failure.map(|_| "{\"error\":\"down\"}".to_owned()),
            }
        };
    ports
        .ledger
        .expect_attempts()
        .withf(|key| key.tenant == own() && key.external_id.as_str() == "Ev1")
        .returning(move |_| {
            ready(Ok(vec![
                attempt(300_000, 299_000, false, Some(503), Some(FailureKind::Status)),
                // A replay by hand before the job ran: not the job's, though it comes first.
                attempt(200_000, 199_000, true, Some(502), Some(FailureKind::Status)),
                attempt(120_000, 119_000, true, Some(500), Some(FailureKind::Status)),
                attempt(1_250, 1_000, true, Some(202), None),
            ]))
        });
    let report = ports.build().event(&cli(), own(), ExternalEventId::new("Ev1").unwrap()).await.unwrap();
    let summary: Vec<_> = report
        .attempts
        .iter()
        .map(|a| {
            let answer = a.answer.as_ref().unwrap();
            (a.replay, a.job, a.outcome.as_str(), answer.status, answer.latency_ms, answer.body.as_deref())
        })
        .collect();
    assert_eq!(
        summary,
        [
            (false, None, "failed", Some(503), 1_000, Some("{\"error\":\"down\"}")),
            (true, None, "failed", Some(502), 1_000, Some("{\"error\":\"down\"}")),
            (true, Some(job), "failed", Some(500), 1_000, Some("{\"error\":\"down\"}")),
            (true, None, "handled", Some(202), 250, None),
        ],
        "Doorman's failed dispatch, the job's replay with what it met, then a replay by hand that handled it"
    );
    assert_eq!(report.attempts[2].detail.as_deref(), Some("agent answered HTTP 500"), "the job's own words");
}

#[tokio::test]
async fn a_first_delivery_is_read_from_its_receipt_with_its_status_and_latency() {
    let mut ports = Ports::new().with_own_tenant();
    let mut handled = receipt(60);
    handled.handled_at = Some(now() - chrono::Duration::seconds(59));
    handled.first_delivery =
        Some(FirstDelivery { started_at: now() - chrono::Duration::milliseconds(59_120), status: 200 });
    ports
        .ledger
        .expect_receipt()
        .returning(move |_| ready(Ok(Some(ReceiptRecord { receipt: handled.clone(), payload_kept: false }))));
    ports.jobs.expect_attempts().returning(|_| ready(Ok(vec![])));
    ports.ledger.expect_attempts().returning(|_| ready(Ok(vec![])));
    let report = ports.build().event(&cli(), own(), ExternalEventId::new("Ev1").unwrap()).await.unwrap();
    assert_eq!(report.attempts.len(), 1);
    let first = &report.attempts[0];
    assert_eq!((first.replay, first.outcome.as_str()), (false, "handled"));
    let answer = first.answer.as_ref().unwrap();
    assert_eq!((answer.status, answer.failure, answer.latency_ms), (Some(200), None, 120));
}

#[tokio::test]
async fn a_redelivered_events_history_is_its_live_failure_then_each_redelivery_the_last_taken() {
    let mut ports = Ports::new().with_own_tenant();
    let at = |ago_ms: i64| now() - chrono::Duration::milliseconds(ago_ms);
    let mut handled = receipt(900);
    handled.handled_at = Some(at(1_000));
    handled.redeliveries = 2;
    // The redelivery the agent took rides on the receipt, as a live dispatch's would.
    handled.first_delivery = Some(FirstDelivery { started_at: at(1_100), status: 200 });
    ports
        .ledger
        .expect_receipt()
        .returning(move |_| ready(Ok(Some(ReceiptRecord { receipt: handled.clone(), payload_kept: false }))));
    ports.jobs.expect_attempts().returning(|_| ready(Ok(vec![])));
    let failed = move |started: i64| AttemptRecord {
        started_at: at(started),
        ended_at: at(started - 10),
        replay: false,
        status: Some(503),
        failure: Some(FailureKind::Status),
        reason: Some("agent answered HTTP 503".into()),
        answer: None,
    };
    ports.ledger.expect_attempts().returning(move |_| ready(Ok(vec![failed(6_000), failed(300_000)])));
    let report = ports.build().event(&cli(), own(), ExternalEventId::new("Ev1").unwrap()).await.unwrap();
    let summary: Vec<_> =
        report.attempts.iter().map(|a| (a.replay, a.redelivery, a.outcome.as_str())).collect();
    assert_eq!(summary, [(false, false, "failed"), (false, true, "failed"), (false, true, "handled")]);
}

mod activity {
    use super::*;
    use crate::errors::OperatorError;
    use crate::model::{ActivityHour, FailingTenant, StrandedTenant, hour_of};

    #[tokio::test]
    async fn a_tenants_window_is_read_from_its_first_hour_on_and_filled_hour_by_hour() {
        let mut ports = Ports::new().with_own_tenant().never_writes();
        let first = hour_of(now()) - chrono::Duration::hours(23);
        let busy = ActivityHour { delivered: 3, failed: 1, ..ActivityHour::empty(hour_of(now())) };
        ports
            .ledger
            .expect_activity()
            .withf(move |tenant, since| *tenant == own() && *since == first)
            .times(1)
            .returning(move |_, _| ready(Ok(vec![busy])));
        let activity = ports.build().activity(&key(Some(own()), true), own(), 24).await.unwrap();
        assert_eq!(activity.hours.len(), 24);
        assert_eq!(activity.hours[0].hour, first);
        assert_eq!(activity.hours[23], busy, "the current hour last");
        assert_eq!(activity.total().failed, 1);
    }

    #[tokio::test]
    async fn another_tenants_activity_is_unknown_to_a_scoped_key_and_nothing_is_read() {
        let mut ports = Ports::new().with_own_tenant().never_writes();
        ports.ledger.expect_activity().never();
        let refused = ports.build().activity(&key(Some(own()), false), other(), 24).await;
        assert!(refused.is_err(), "{refused:?}");
    }

    #[tokio::test]
    async fn the_overview_is_supports_a_portal_key_is_refused_it() {
        let mut ports = Ports::new().never_writes();
        ports.ledger.expect_failing_most().never();
        ports.ledger.expect_stranded_most().never();
        ports.agents.expect_troubled().never();
        let refused = ports.build().overview(&key(Some(own()), false)).await;
        assert!(matches!(refused, Err(OperatorError::Forbidden(_))), "{refused:?}");

        let mut ports = Ports::new().never_writes();
        let since = hour_of(now()) - chrono::Duration::hours(23);
        let failing = FailingTenant { tenant: own(), name: "Acme".into(), failed: 7, delivered: 2 };
        let listed = failing.clone();
        ports
            .ledger
            .expect_failing_most()
            .withf(move |from, limit| *from == since && *limit == 10)
            .times(1)
            .returning(move |_, _| ready(Ok(vec![listed.clone()])));
        // Stranded by the listing's threshold (the settings' 600 s before now), as marked.
        let stranded = StrandedTenant { tenant: other(), name: "Globex".into(), stranded: 4 };
        let counted = stranded.clone();
        ports
            .ledger
            .expect_stranded_most()
            .withf(|before, limit| *before == now() - chrono::Duration::seconds(600) && *limit == 10)
            .times(1)
            .returning(move |_, _| ready(Ok(vec![counted.clone()])));
        ports.agents.expect_troubled().times(1).returning(|_| ready(Ok(vec![])));
        let overview = ports.build().overview(&key(None, true)).await.unwrap();
        assert_eq!(
            (overview.since, overview.failing_most, overview.stranded_most, overview.agents),
            (since, vec![failing], vec![stranded], vec![])
        );
    }

    #[tokio::test]
    async fn the_overview_fails_when_the_stranded_count_cannot_be_read() {
        let mut ports = Ports::new().never_writes();
        ports.ledger.expect_failing_most().returning(|_, _| ready(Ok(vec![])));
        ports
            .ledger
            .expect_stranded_most()
            .times(1)
            .returning(|_, _| ready(Err(StorageError::Unavailable("down".into()))));
        ports.agents.expect_troubled().returning(|_| ready(Ok(vec![])));
        let failed = ports.build().overview(&key(None, true)).await;
        assert!(matches!(failed, Err(OperatorError::Storage(_))), "{failed:?}");
    }
}

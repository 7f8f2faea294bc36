//! The operator use cases as tests set up and inspect their world: on an owner pool, acting
//! as the command line does, with shorthand for what tests do most.

use std::sync::Arc;
use std::time::Duration;

use doorman_adapters::bridge::DestinationPolicy;
use doorman_adapters::postgres::PgOperatorPorts;
use doorman_adapters::postgres::pool::{self, PoolSettings};
use doorman_domain::usecases::operator::workspaces::LinkedNow;
use doorman_domain::usecases::operator::{Operator, OperatorSettings};
use doorman_domain::{
    AgentSecret, AgentUrl, AuditAction, AuditEntry, Caller, EventState, OperatorError, PageLimit,
    PageRequest, Receipt, RequestId, TenantId, TenantName, WorkspaceId,
};

use crate::keys::test_keys;

/// Where tests' install links start.
pub const INSTALL_BASE_URL: &str = "http://doorman.test";

/// Where tests' console sign-in links start.
pub const CONSOLE_BASE_URL: &str = "http://admin.doorman.test";

/// [`Operator`] over the PostgreSQL ports, as `cli`, with private agents allowed and nothing
/// in flight for long (a receipt unfinished at all reads as stranded).
#[derive(Debug)]
pub struct TestOperator {
    operator: Operator<PgOperatorPorts>,
    caller: Caller,
}

impl TestOperator {
    pub fn owner(database_url: &str) -> Self {
        let pool =
            pool::connect_as(database_url, &PoolSettings { max_size: 2, ..PoolSettings::default() }, None);
        let ports = PgOperatorPorts::new(
            pool,
            Some(Arc::new(test_keys())),
            DestinationPolicy { allow_private: true },
        );
        let settings = OperatorSettings {
            install_base_url: Some(INSTALL_BASE_URL.to_owned()),
            console_base_url: Some(CONSOLE_BASE_URL.to_owned()),
            stranded_after: Duration::ZERO,
            replay_hold: Duration::from_secs(90),
        };
        let caller = Caller {
            actor: doorman_domain::Actor::Cli { user: "test".into() },
            request: RequestId::new("test").expect("a valid request id"),
        };
        Self { operator: Operator::new(ports, settings), caller }
    }

    /// The use cases themselves.
    pub fn use_cases(&self) -> &Operator<PgOperatorPorts> {
        &self.operator
    }

    /// Who they act as.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    pub async fn create_tenant(&self, name: &str) -> TenantId {
        let name = TenantName::new(name).expect("a valid tenant name");
        self.operator.create_tenant(&self.caller, name, None).await.expect("create a tenant").tenant.id
    }

    pub async fn link(
        &self,
        tenant: TenantId,
        team: Option<&str>,
        enterprise: Option<&str>,
    ) -> Result<LinkedNow, OperatorError> {
        let id = |raw: Option<&str>| raw.map(|id| WorkspaceId::new(id).expect("a valid workspace id"));
        self.operator.link_workspace(&self.caller, tenant, id(team), id(enterprise)).await
    }

    pub async fn set_agent(&self, tenant: TenantId, url: &str, secret: &str) -> Result<(), OperatorError> {
        let url = AgentUrl::parse(url).expect("a valid agent URL");
        let secret = AgentSecret::parse(secret).expect("a valid agent secret");
        self.operator.set_agent(&self.caller, tenant, url, secret).await
    }

    /// An install link usable until `at`, which may be past (the use case refuses that; tests
    /// of expiry need it): straight through the port, audited as the use case would.
    pub async fn install_link_until(&self, tenant: TenantId, at: chrono::DateTime<chrono::Utc>) -> String {
        use doorman_domain::ports::{InstallRecords, OperatorPorts};
        let audit = AuditEntry::new(&self.caller, AuditAction::InstallLinkCreate, Some(tenant), None);
        self.operator
            .ports()
            .installs()
            .create_link(tenant, at, &audit)
            .await
            .expect("create an install link")
    }

    pub async fn pause(&self, tenant: TenantId, paused: bool) -> Result<(), OperatorError> {
        self.operator.pause_agent(&self.caller, tenant, paused).await
    }

    /// Every tenant's installations.
    pub async fn installations(&self) -> Vec<doorman_domain::InstallationSummary> {
        self.operator.installations(&self.caller, None).await.expect("list installations")
    }

    /// Every tenant's unfinished receipts without a failure.
    pub async fn stranded(&self) -> Vec<Receipt> {
        self.every(EventState::Stranded).await
    }

    /// Every tenant's receipts whose dispatch failed.
    pub async fn failed(&self) -> Vec<Receipt> {
        self.every(EventState::Failed).await
    }

    async fn every(&self, state: EventState) -> Vec<Receipt> {
        let mut page =
            PageRequest { limit: PageLimit::new(PageLimit::MAX).expect("the largest page"), after: None };
        let mut found = Vec::new();
        loop {
            let listed = self
                .operator
                .events(&self.caller, None, Some(state), Default::default(), &page)
                .await
                .expect("list events");
            found.extend(listed.items.into_iter().map(|report| report.receipt));
            match listed.next {
                Some(next) => page.after = Some(next),
                None => return found,
            }
        }
    }
}

//! The tenant directory served from memory, kept coherent across processes by notices.
//!
//! Resolve is half of an acknowledgement's SQL and its answer rarely changes, so every
//! process keeps workspace → tenant → agent in memory, "not linked" included. What keeps that
//! memory true is a listener (in PostgreSQL: `LISTEN doorman_directory`, fed by triggers on
//! the directory tables in the same transaction as each change): a notice drops exactly what
//! it names, in every process, within milliseconds of the commit.
//!
//! Correctness never depends on the listener. Until it has subscribed, and from the moment it
//! loses its connection until it has subscribed again, the memory is empty and bypassed:
//! every resolve goes to the database. A lookup that was in flight when a notice arrived is
//! not remembered (a generation counter tells), so a stale answer cannot be stored after the
//! notice that made it stale.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use doorman_domain::ports::TenantDirectory;
use doorman_domain::{Platform, StorageError, Tenant, TenantId, WorkspaceId, WorkspaceRef};

/// The most workspaces remembered; past it the memory starts over (bounded, whatever the
/// traffic: unknown workspaces are remembered too, and only Slack can make them up).
const MAX_ENTRIES: usize = 10_000;

/// What a notice says changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A workspace link was added, changed or removed: lookups naming this team or this
    /// enterprise may now resolve differently.
    Workspace { platform: Platform, team_id: Option<WorkspaceId>, enterprise_id: Option<WorkspaceId> },
    /// A tenant or its agent changed (paused, resumed, new URL or secret, deleted).
    Tenant(TenantId),
    /// Something changed that the notice could not say precisely: forget everything.
    Everything,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a listener is subscribed; until then nothing is remembered or served.
    listening: bool,
    /// Bumped by every notice and every change of `listening`.
    generation: u64,
    /// By platform, then workspace: a look-up borrows the workspace it is asked about.
    entries: HashMap<Platform, HashMap<WorkspaceRef, Option<Tenant>>>,
}

impl State {
    fn len(&self) -> usize {
        self.entries.values().map(HashMap::len).sum()
    }

    fn get(&self, platform: Platform, workspace: &WorkspaceRef) -> Option<&Option<Tenant>> {
        self.entries.get(&platform)?.get(workspace)
    }
}

#[derive(Debug, Default)]
struct Shared {
    /// Read by every delivery, written by notices and misses: a read lock is all a hit takes.
    state: RwLock<State>,
    /// Resolves that reached the database (not served from memory), since start.
    lookups: AtomicU64,
    /// Notices applied, since start.
    notices: AtomicU64,
}

impl Shared {
    // Every update below leaves the state consistent; a poisoned lock is still usable.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A [`TenantDirectory`] that remembers `inner`'s answers while a listener keeps it told.
#[derive(Debug)]
pub struct NotifiedDirectory<D> {
    inner: D,
    shared: Arc<Shared>,
}

impl<D> NotifiedDirectory<D> {
    /// Not listening yet: every resolve reaches `inner` until a listener reports in through
    /// [`NotifiedDirectory::notices`].
    pub fn new(inner: D) -> Self {
        Self { inner, shared: Arc::default() }
    }

    /// The handle a listener reports through.
    pub fn notices(&self) -> Notices {
        Notices(self.shared.clone())
    }

    /// A read-only view of the memory, for metrics.
    pub fn status(&self) -> DirectoryStatus {
        DirectoryStatus(self.shared.clone())
    }
}

/// What the directory's memory looks like right now.
#[derive(Debug, Clone)]
pub struct DirectoryStatus(Arc<Shared>);

impl DirectoryStatus {
    /// Whether answers are being remembered and served (a listener is subscribed).
    pub fn is_listening(&self) -> bool {
        self.0.read().listening
    }

    /// How many workspaces are remembered.
    pub fn remembered(&self) -> usize {
        self.0.read().len()
    }

    /// How many resolves went to the database (memory did not have them), since start.
    pub fn lookups(&self) -> u64 {
        self.0.lookups.load(Ordering::Relaxed)
    }

    /// How many change notices were applied, since start.
    pub fn notices(&self) -> u64 {
        self.0.notices.load(Ordering::Relaxed)
    }
}

/// What a listener reports. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Notices(Arc<Shared>);

impl Notices {
    /// The listener is subscribed: from now on every change will be announced. Anything
    /// could have changed while it was not, so memory starts empty.
    pub fn subscribed(&self) {
        let mut state = self.0.write();
        state.entries.clear();
        state.generation += 1;
        state.listening = true;
    }

    /// The listener lost its subscription: changes may go unannounced, so forget everything
    /// and resolve from the database until it is back.
    pub fn lost(&self) {
        let mut state = self.0.write();
        state.listening = false;
        state.entries.clear();
        state.generation += 1;
    }

    /// Forgets what `notice` names.
    pub fn apply(&self, notice: &Notice) {
        let mut state = self.0.write();
        state.generation += 1;
        self.0.notices.fetch_add(1, Ordering::Relaxed);
        match notice {
            Notice::Everything => state.entries.clear(),
            Notice::Tenant(tenant) => {
                for workspaces in state.entries.values_mut() {
                    workspaces.retain(|_, found| found.as_ref().is_none_or(|t| t.id != *tenant));
                }
            }
            Notice::Workspace { platform, team_id, enterprise_id } => {
                if let Some(workspaces) = state.entries.get_mut(platform) {
                    workspaces.retain(|workspace, _| {
                        let names_it = (team_id.is_some() && workspace.team_id() == team_id.as_ref())
                            || (enterprise_id.is_some()
                                && workspace.enterprise_id() == enterprise_id.as_ref());
                        !names_it
                    });
                }
            }
        }
    }
}

impl<D: TenantDirectory> TenantDirectory for NotifiedDirectory<D> {
    async fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<Option<Tenant>, StorageError> {
        let generation = {
            let state = self.shared.read();
            if !state.listening {
                None
            } else if let Some(found) = state.get(platform, workspace) {
                return Ok(found.clone());
            } else {
                Some(state.generation)
            }
        };
        self.shared.lookups.fetch_add(1, Ordering::Relaxed);
        let found = self.inner.resolve(platform, workspace).await?;
        if let Some(generation) = generation {
            let mut state = self.shared.write();
            // Remember only if nothing was announced meanwhile: else this answer may predate it.
            if state.listening && state.generation == generation {
                if state.len() >= MAX_ENTRIES {
                    state.entries.clear();
                }
                state.entries.entry(platform).or_default().insert(workspace.clone(), found.clone());
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;

    use doorman_domain::ports::MockTenantDirectory;
    use doorman_domain::{Agent, TenantId, WorkspaceId};

    use super::*;

    fn ready<T: Send + 'static>(value: T) -> Pin<Box<dyn Future<Output = T> + Send>> {
        Box::pin(async move { value })
    }

    fn ws(id: &str) -> WorkspaceId {
        WorkspaceId::new(id).unwrap()
    }

    fn team(id: &str) -> WorkspaceRef {
        WorkspaceRef::team(ws(id))
    }

    fn tenant(id: TenantId) -> Tenant {
        Tenant { id, agent: Agent::NotSet, installation: None, retain_payloads: false }
    }

    /// A directory whose inner one answers `tenant` for everything, `calls` times at most.
    fn directory(calls: usize, found: Option<Tenant>) -> NotifiedDirectory<MockTenantDirectory> {
        let mut inner = MockTenantDirectory::new();
        inner.expect_resolve().times(calls).returning(move |_, _| ready(Ok(found.clone())));
        NotifiedDirectory::new(inner)
    }

    #[tokio::test]
    async fn without_a_listener_every_resolve_reaches_the_database() {
        let directory = directory(3, Some(tenant(TenantId::generate())));
        for _ in 0..3 {
            assert!(directory.resolve(Platform::Slack, &team("T1")).await.unwrap().is_some());
        }
        assert_eq!(directory.status().remembered(), 0);
        assert_eq!(directory.status().lookups(), 3);
    }

    #[tokio::test]
    async fn while_listening_known_and_unknown_workspaces_are_remembered() {
        let mut inner = MockTenantDirectory::new();
        let id = TenantId::generate();
        inner.expect_resolve().times(2).returning(move |_, w| {
            let found = (w.team_id().unwrap().as_str() == "T1").then(|| tenant(id));
            ready(Ok(found))
        });
        let directory = NotifiedDirectory::new(inner);
        directory.notices().subscribed();
        for _ in 0..5 {
            assert_eq!(directory.resolve(Platform::Slack, &team("T1")).await.unwrap().unwrap().id, id);
            assert_eq!(directory.resolve(Platform::Slack, &team("TX")).await.unwrap(), None, "not linked");
        }
    }

    #[tokio::test]
    async fn a_tenant_notice_forgets_that_tenants_workspaces_only() {
        let (a, b) = (TenantId::generate(), TenantId::generate());
        let mut inner = MockTenantDirectory::new();
        inner.expect_resolve().times(3).returning(move |_, w| {
            ready(Ok(Some(tenant(if w.team_id().unwrap().as_str() == "TA" { a } else { b }))))
        });
        let directory = NotifiedDirectory::new(inner);
        let notices = directory.notices();
        notices.subscribed();
        directory.resolve(Platform::Slack, &team("TA")).await.unwrap();
        directory.resolve(Platform::Slack, &team("TB")).await.unwrap();
        notices.apply(&Notice::Tenant(a));
        assert_eq!(directory.status().remembered(), 1);
        directory.resolve(Platform::Slack, &team("TA")).await.unwrap(); // the third call
        directory.resolve(Platform::Slack, &team("TB")).await.unwrap(); // remembered
    }

    #[tokio::test]
    async fn a_workspace_notice_forgets_lookups_naming_its_team_or_enterprise() {
        let directory = directory(3, None);
        let notices = directory.notices();
        notices.subscribed();
        let in_grid = WorkspaceRef::new(Some(ws("T5")), Some(ws("E1")), false).unwrap();
        directory.resolve(Platform::Slack, &in_grid).await.unwrap();
        directory.resolve(Platform::Slack, &team("T9")).await.unwrap();
        directory.resolve(Platform::Slack, &team("T7")).await.unwrap();
        // An org-wide link of E1 changes how any team inside E1 resolves.
        notices.apply(&Notice::Workspace {
            platform: Platform::Slack,
            team_id: None,
            enterprise_id: Some(ws("E1")),
        });
        notices.apply(&Notice::Workspace {
            platform: Platform::Slack,
            team_id: Some(ws("T9")),
            enterprise_id: None,
        });
        assert_eq!(directory.status().remembered(), 1, "only T7 is left");
    }

    #[tokio::test]
    async fn losing_the_listener_forgets_everything_and_bypasses_until_subscribed_again() {
        let directory = directory(4, Some(tenant(TenantId::generate())));
        let notices = directory.notices();
        notices.subscribed();
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // 1
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // remembered
        notices.lost();
        assert_eq!(directory.status().remembered(), 0);
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // 2
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // 3: not remembered while lost
        notices.subscribed();
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // 4
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap(); // remembered
    }

    #[tokio::test]
    async fn an_answer_read_before_a_notice_is_not_remembered_after_it() {
        let mut inner = MockTenantDirectory::new();
        let notices_slot: Arc<Mutex<Option<Notices>>> = Arc::default();
        let slot = notices_slot.clone();
        let id = TenantId::generate();
        inner.expect_resolve().times(2).returning(move |_, _| {
            // The change commits and its notice arrives while this lookup is in flight.
            if let Some(notices) = slot.lock().unwrap().as_ref() {
                notices.apply(&Notice::Tenant(id));
            }
            ready(Ok(Some(tenant(id))))
        });
        let directory = NotifiedDirectory::new(inner);
        directory.notices().subscribed();
        *notices_slot.lock().unwrap() = Some(directory.notices());
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap();
        assert_eq!(directory.status().remembered(), 0, "possibly stale: not kept");
        *notices_slot.lock().unwrap() = None;
        directory.resolve(Platform::Slack, &team("T1")).await.unwrap();
        assert_eq!(directory.status().remembered(), 1);
    }
}

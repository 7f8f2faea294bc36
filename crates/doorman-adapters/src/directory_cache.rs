//! An opt-in cache in front of a tenant directory.
//!
//! Resolve is half of an acknowledgement's statements and its answer rarely changes, so a
//! short per-process cache roughly halves the SQL on the acknowledgement path
//! (docs/benchmarks.md). The price is staleness: for up to the TTL after an operator pauses
//! or resumes an agent, changes its URL or secret, a process keeps using what it resolved.
//! That changes the seed's "a paused bridge answers 503 at once", so the cache is off by
//! default (`DOORMAN_RESOLVE_CACHE_TTL=0s`) and an operator turns it on knowingly.
//!
//! Unknown workspaces are never cached, so a newly linked workspace resolves at once. Storage
//! errors are never cached.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use doorman_domain::ports::TenantDirectory;
use doorman_domain::{Platform, StorageError, Tenant, WorkspaceRef};

/// The most workspaces remembered; past it the cache starts over (bounded memory whatever
/// the traffic).
const MAX_ENTRIES: usize = 10_000;

type Entries = HashMap<(Platform, WorkspaceRef), (Instant, Tenant)>;

#[derive(Debug)]
pub struct CachedDirectory<D> {
    inner: D,
    ttl: Duration,
    entries: Mutex<Entries>,
}

impl<D> CachedDirectory<D> {
    /// A zero `ttl` turns the cache off: every resolve goes to `inner`.
    pub fn new(inner: D, ttl: Duration) -> Self {
        Self { inner, ttl, entries: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Every update is a single insert or clear: a poisoned map is still consistent.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<D: TenantDirectory> TenantDirectory for CachedDirectory<D> {
    async fn resolve(
        &self,
        platform: Platform,
        workspace: &WorkspaceRef,
    ) -> Result<Option<Tenant>, StorageError> {
        if self.ttl.is_zero() {
            return self.inner.resolve(platform, workspace).await;
        }
        let key = (platform, workspace.clone());
        if let Some((at, tenant)) = self.lock().get(&key)
            && at.elapsed() < self.ttl
        {
            return Ok(Some(tenant.clone()));
        }
        let found = self.inner.resolve(platform, workspace).await?;
        if let Some(tenant) = &found {
            let mut entries = self.lock();
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(key, (Instant::now(), tenant.clone()));
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use doorman_domain::ports::MockTenantDirectory;
    use doorman_domain::{Agent, TenantId, WorkspaceId};

    use super::*;

    fn ready<T: Send + 'static>(value: T) -> Pin<Box<dyn Future<Output = T> + Send>> {
        Box::pin(async move { value })
    }

    fn team(id: &str) -> WorkspaceRef {
        WorkspaceRef::team(WorkspaceId::new(id).unwrap())
    }

    fn tenant() -> Tenant {
        Tenant { id: TenantId::generate(), agent: Agent::NotSet }
    }

    #[tokio::test]
    async fn with_a_zero_ttl_every_resolve_reaches_the_directory() {
        let mut inner = MockTenantDirectory::new();
        let found = tenant();
        inner.expect_resolve().times(3).returning(move |_, _| ready(Ok(Some(found.clone()))));
        let cache = CachedDirectory::new(inner, Duration::ZERO);
        for _ in 0..3 {
            assert!(cache.resolve(Platform::Slack, &team("T1")).await.unwrap().is_some());
        }
    }

    #[tokio::test]
    async fn a_known_workspace_is_served_from_the_cache_until_the_ttl_passes() {
        let mut inner = MockTenantDirectory::new();
        let found = tenant();
        let expected = found.clone();
        inner.expect_resolve().times(2).returning(move |_, _| ready(Ok(Some(found.clone()))));
        let cache = CachedDirectory::new(inner, Duration::from_millis(100));
        for _ in 0..5 {
            assert_eq!(cache.resolve(Platform::Slack, &team("T1")).await.unwrap(), Some(expected.clone()));
        }
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert_eq!(cache.resolve(Platform::Slack, &team("T1")).await.unwrap(), Some(expected));
    }

    #[tokio::test]
    async fn unknown_workspaces_and_errors_are_never_cached() {
        let mut inner = MockTenantDirectory::new();
        let mut seq = mockall::Sequence::new();
        inner.expect_resolve().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(None)));
        inner
            .expect_resolve()
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, _| ready(Err(StorageError::Unavailable("down".into()))));
        inner.expect_resolve().times(1).in_sequence(&mut seq).returning(|_, _| ready(Ok(Some(tenant()))));
        let cache = CachedDirectory::new(inner, Duration::from_secs(60));
        assert_eq!(cache.resolve(Platform::Slack, &team("T1")).await.unwrap(), None);
        assert!(cache.resolve(Platform::Slack, &team("T1")).await.is_err());
        assert!(
            cache.resolve(Platform::Slack, &team("T1")).await.unwrap().is_some(),
            "linked since: resolved at once"
        );
    }

    #[tokio::test]
    async fn workspaces_are_cached_apart() {
        let mut inner = MockTenantDirectory::new();
        inner.expect_resolve().times(2).returning(|_, _| ready(Ok(Some(tenant()))));
        let cache = CachedDirectory::new(inner, Duration::from_secs(60));
        let a = cache.resolve(Platform::Slack, &team("TA")).await.unwrap().unwrap();
        let b = cache.resolve(Platform::Slack, &team("TB")).await.unwrap().unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(cache.resolve(Platform::Slack, &team("TA")).await.unwrap().unwrap().id, a.id);
    }
}

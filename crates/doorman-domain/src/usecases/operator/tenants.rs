//! Creating, reading and listing tenants; whether a tenant keeps payloads for replay, whether
//! its events are redelivered, and whether its read-only portals read its payloads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::{Operator, entry};
use crate::errors::{OperatorError, StorageError};
use crate::model::{
    AuditAction, AuditEntry, Caller, Created, Idempotency, IdempotencyKey, NewTenant, Page, PageRequest,
    RedeliverySchedule, TenantCursor, TenantId, TenantName, TenantRecord, TenantSearch, Total,
};
use crate::ports::{OperatorPorts, Tenants};

/// How many receipts one statement of an offboarding deletes: short transactions, so the
/// serving processes' claims of other tenants never wait behind a long one.
pub const PURGE_BATCH: u32 = 10_000;

/// What deleting a tenant removed besides its directory rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offboarded {
    /// Its receipts (its kept payloads and request fingerprints went with its directory).
    pub receipts: u64,
    /// Some of its receipts are left: their deletion stopped (its `tenant.purge` audit entry
    /// says why), and the next `receipts prune` deletes them. The tenant is deleted all the same.
    pub receipts_left: bool,
}

/// A tenant just created, or the one an idempotent repeat was first answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTenant {
    pub tenant: TenantRecord,
    /// True when this request created it; false for a repeat under the same idempotency key.
    pub new: bool,
}

impl<P: OperatorPorts> Operator<P> {
    /// Creates a tenant. Only a caller for every tenant may. With an idempotency key, the
    /// same request again returns the first answer and creates nothing; the key with a
    /// different request is refused, and so is any request under it while the first is
    /// still being processed.
    pub async fn create_tenant(
        &self,
        caller: &Caller,
        name: TenantName,
        idempotency: Option<IdempotencyKey>,
    ) -> Result<CreatedTenant, OperatorError> {
        if !caller.actor.may_create_tenants() {
            return Err(OperatorError::Forbidden(
                "only a key for every tenant, and not read-only, creates tenants",
            ));
        }
        let tenant = NewTenant { id: TenantId::generate(), name };
        let idempotency = idempotency.map(|key| Idempotency {
            scope: caller.actor.idempotency_scope(),
            key,
            fingerprint: tenant.name.as_str().to_owned(),
        });
        let audit = AuditEntry::new(
            caller,
            AuditAction::TenantCreate,
            Some(tenant.id),
            Some(tenant.name.as_str().to_owned()),
        );
        match self.ports.tenants().create(&tenant, idempotency, &audit).await? {
            Created::New(tenant) => Ok(CreatedTenant { tenant, new: true }),
            Created::Repeated(tenant) => Ok(CreatedTenant { tenant, new: false }),
            Created::KeyReused => Err(OperatorError::IdempotencyKeyReused),
            Created::InProgress => Err(OperatorError::IdempotencyKeyInUse),
        }
    }

    /// One tenant the caller may see.
    pub async fn tenant(&self, caller: &Caller, tenant: TenantId) -> Result<TenantRecord, OperatorError> {
        self.visible(caller, tenant).await
    }

    /// The tenants the caller may see, oldest first: those every one of `search` finds.
    pub async fn tenants(
        &self,
        caller: &Caller,
        search: Vec<TenantSearch>,
        page: &PageRequest<TenantCursor>,
    ) -> Result<Page<TenantRecord, TenantCursor>, OperatorError> {
        Ok(self.ports.tenants().list(caller.actor.only_tenant(), search, page).await?)
    }

    /// How many tenants `tenants` lists with the same search, over all its pages: exact up to
    /// [`Total::CAP`], else "more than" it.
    pub async fn tenants_total(
        &self,
        caller: &Caller,
        search: Vec<TenantSearch>,
    ) -> Result<Total, OperatorError> {
        let counted = self.ports.tenants().count(caller.actor.only_tenant(), search, Total::CAP + 1).await?;
        Ok(Total::of_counted(counted))
    }

    /// Renames a tenant.
    pub async fn rename_tenant(
        &self,
        caller: &Caller,
        tenant: TenantId,
        name: TenantName,
    ) -> Result<TenantRecord, OperatorError> {
        let before = self.writable(caller, tenant).await?;
        let audit =
            entry(caller, AuditAction::TenantRename, tenant, format!("{} -> {}", before.name, name.as_str()));
        self.ports.tenants().rename(tenant, &name, &audit).await?;
        Ok(TenantRecord { name: name.as_str().to_owned(), ..before })
    }

    /// Offboards a customer: deletes the tenant and everything Doorman keeps for it (its
    /// workspace links, so its next event is answered as an unknown workspace's, its
    /// installations and tokens, agent, kept payloads, scoped keys), then its receipts in
    /// batches of [`PURGE_BATCH`]. The audit trail keeps the tenant's entries and records
    /// this one. Only a caller for every tenant, and not read-only, may: a scoped key cannot
    /// delete its own tenant.
    ///
    /// Once the tenant's deletion has committed, the answer is that it is deleted, whatever
    /// follows: deleting its receipts is a run of its own, audited before (`tenant.purge`
    /// `started`) and after (how many, or why it stopped). One that stops is answered as
    /// `receipts_left`, and the next `receipts prune` finishes it.
    pub async fn delete_tenant(
        &self,
        caller: &Caller,
        tenant: TenantId,
    ) -> Result<Offboarded, OperatorError> {
        super::in_scope(caller, tenant)?;
        if !caller.actor.may_create_tenants() {
            return Err(OperatorError::Forbidden(
                "only a key for every tenant, and not read-only, deletes tenants",
            ));
        }
        let record = self.visible(caller, tenant).await?;
        let audit = entry(caller, AuditAction::TenantDelete, tenant, record.name.clone());
        if !self.ports.tenants().delete(tenant, &audit).await? {
            return Err(OperatorError::UnknownTenant(tenant));
        }
        let (deleted, finished) = (AtomicU64::new(0), AtomicBool::new(false));
        let purge = async {
            let receipts = self.purge_receipts(tenant, &deleted).await?;
            finished.store(true, Ordering::Relaxed);
            Ok(receipts)
        };
        let done = |receipts: &u64| format!("{receipts} receipts deleted");
        match self.recorded_run(caller, AuditAction::TenantPurge, Some(tenant), purge, done).await {
            Ok(receipts) => Ok(Offboarded { receipts, receipts_left: false }),
            // What the answer says is what the purge did: one that finished leaves nothing,
            // although the audit entry saying so could not be written.
            Err(error) if finished.load(Ordering::Relaxed) => {
                tracing::warn!(tenant.id = %tenant, error = %error, "a deleted tenant's receipts are all deleted, but the audit entry saying so is not recorded");
                Ok(Offboarded { receipts: deleted.load(Ordering::Relaxed), receipts_left: false })
            }
            Err(error) => {
                tracing::warn!(tenant.id = %tenant, error = %error, "a deleted tenant's receipts are left; the next `receipts prune` deletes them");
                Ok(Offboarded { receipts: deleted.load(Ordering::Relaxed), receipts_left: true })
            }
        }
    }

    /// Deletes a deleted tenant's receipts, a batch at a time, until a batch comes back
    /// short; counts them in `deleted` as they go (what went before a batch failed counts).
    async fn purge_receipts(&self, tenant: TenantId, deleted: &AtomicU64) -> Result<u64, StorageError> {
        loop {
            let purged = self.ports.tenants().purge_receipts(tenant, PURGE_BATCH).await?;
            let total = deleted.fetch_add(purged, Ordering::Relaxed) + purged;
            if purged < u64::from(PURGE_BATCH) {
                return Ok(total);
            }
        }
    }

    /// Turns keeping payloads for replay on or off. Off stops keeping new ones; those kept go
    /// when their events are handled or pruned.
    pub async fn set_retain_payloads(
        &self,
        caller: &Caller,
        tenant: TenantId,
        on: bool,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let audit = entry(
            caller,
            AuditAction::TenantRetainPayloads,
            tenant,
            Some(if on { "on" } else { "off" }.to_owned()),
        );
        Ok(self.ports.tenants().set_retain_payloads(tenant, on, &audit).await?)
    }

    /// Lets the tenant's read-only portal keys made with `read_payloads` read its kept
    /// payloads (on), or stops them (off): the tenant's allowance in
    /// [`crate::KeyScope::payload_access`], read at each request, so it holds from the next
    /// one. Who may change it is who may change the tenant's other settings. Audited as `on` or
    /// `off`.
    pub async fn set_read_only_portals_read_payloads(
        &self,
        caller: &Caller,
        tenant: TenantId,
        on: bool,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let audit = entry(
            caller,
            AuditAction::TenantReadOnlyPortalsReadPayloads,
            tenant,
            Some(if on { "on" } else { "off" }.to_owned()),
        );
        Ok(self.ports.tenants().set_read_only_portals_read_payloads(tenant, on, &audit).await?)
    }

    /// Turns redelivery on with `schedule` or off (`None`): the tenant's events that were not
    /// handled are sent again on the schedule (ADR 26), their payloads kept (sealed) from the
    /// claim until they are handled or given up. Audited as the schedule in the operator's
    /// words (`5s,5m,30m`) or `off`.
    pub async fn set_redelivery(
        &self,
        caller: &Caller,
        tenant: TenantId,
        schedule: Option<RedeliverySchedule>,
    ) -> Result<(), OperatorError> {
        self.writable(caller, tenant).await?;
        let words = schedule.as_ref().map_or_else(|| "off".to_owned(), RedeliverySchedule::to_string);
        let audit = entry(caller, AuditAction::TenantRedelivery, tenant, Some(words));
        Ok(self.ports.tenants().set_redelivery(tenant, schedule, &audit).await?)
    }
}

//! What became of events (accounting), and sending kept ones again (replays).

use chrono::{DateTime, Utc};

use super::{Operator, entry};
use crate::errors::OperatorError;
use crate::model::{
    AuditAction, Caller, EventCursor, EventFilter, EventReport, EventState, ExternalEventId, Page,
    PageRequest, Platform, ReceiptKey, ReceiptRecord, ReplaySelection, Replayed, TenantId,
};
use crate::ports::{
    AgentBridge, AuditTrail, Clock, Installations, Ledger, OperatorPorts, ReceiptStore, StoredEvents,
    TenantDirectory,
};
use crate::usecases::Inbound;

impl<P: OperatorPorts> Operator<P> {
    /// One event: handled, failed, in flight or stranded, with its dispatches and whether its
    /// payload is kept. No receipt (never received, pruned, or from a workspace no tenant had
    /// linked) is `NotFound`.
    pub async fn event(
        &self,
        caller: &Caller,
        tenant: TenantId,
        event_id: ExternalEventId,
    ) -> Result<EventReport, OperatorError> {
        self.visible(caller, tenant).await?;
        let key = ReceiptKey { tenant, platform: Platform::Slack, external_id: event_id };
        let found = self.ports.ledger().receipt(&key).await?;
        let record = found
            .ok_or_else(|| OperatorError::NotFound { what: "event", id: key.external_id.to_string() })?;
        Ok(self.report(record))
    }

    /// Failed (newest failure first) or stranded (oldest first) events: of one tenant, or (a
    /// caller for every tenant) of all.
    pub async fn events(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
        state: EventState,
        since: Option<DateTime<Utc>>,
        page: &PageRequest<EventCursor>,
    ) -> Result<Page<EventReport, EventCursor>, OperatorError> {
        let tenant = self.scoped(caller, tenant).await?;
        let filter = EventFilter { state, since, stranded_before: self.stranded_before() };
        let found = self.ports.ledger().list(tenant, &filter, page).await?;
        Ok(found.map(|record| self.report(record)))
    }

    /// Sends the tenant's kept events that `selection` names to its agent again, through the
    /// live path after the claim ([`Inbound::replay`]), and says what became of each. A dry
    /// run changes nothing, so a read-only caller may make one; a replay is audited before
    /// anything is sent.
    pub async fn replay<D, B, R, I, C, S>(
        &self,
        caller: &Caller,
        inbound: &Inbound<D, B, R, I, C>,
        stored: &S,
        tenant: TenantId,
        selection: &ReplaySelection,
        dry_run: bool,
    ) -> Result<Vec<Replayed>, OperatorError>
    where
        D: TenantDirectory,
        B: AgentBridge,
        R: ReceiptStore,
        I: Installations,
        C: Clock,
        S: StoredEvents,
    {
        if dry_run {
            self.visible(caller, tenant).await?;
        } else {
            self.writable(caller, tenant).await?;
            let target = match selection {
                ReplaySelection::Event(id) => id.to_string(),
                ReplaySelection::FailedSince(since) => format!("failed since {}", since.to_rfc3339()),
                ReplaySelection::StrandedBefore(before) => format!("stranded before {}", before.to_rfc3339()),
            };
            self.ports.audit().record(&entry(caller, AuditAction::EventsReplay, tenant, target)).await?;
        }
        Ok(inbound.replay(stored, tenant, selection, self.settings.replay_hold, dry_run).await?)
    }

    /// Receipts claimed before this are stranded if still unfinished.
    pub fn stranded_before(&self) -> DateTime<Utc> {
        let now = self.ports.clock().now();
        chrono::Duration::from_std(self.settings.stranded_after)
            .ok()
            .and_then(|after| now.checked_sub_signed(after))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    fn report(&self, record: ReceiptRecord) -> EventReport {
        let status = record.receipt.status(self.ports.clock().now(), self.settings.stranded_after);
        EventReport { receipt: record.receipt, status, payload_kept: record.payload_kept }
    }
}

//! What became of events (accounting): one, with each of its dispatches, or a listing.

use chrono::{DateTime, Utc};

use super::Operator;
use crate::errors::OperatorError;
use crate::model::{
    Attempt, Caller, EventCursor, EventFilter, EventMatch, EventReport, EventState, EventType,
    ExternalEventId, Page, PageRequest, PayloadHidden, PayloadView, Platform, ReceiptKey, ReceiptRecord,
    ReplaySelection, SelectionRefused, TenantId, Total,
};
use crate::ports::{Clock, Ledger, OperatorPorts, ReplayJobs};

/// Which events a listing selects besides their state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    /// At or after this: the last failure's time for failed events, the claim's otherwise.
    pub since: Option<DateTime<Utc>>,
    /// Before this, likewise.
    pub until: Option<DateTime<Utc>>,
    pub event_type: Option<EventType>,
}

impl<P: OperatorPorts> Operator<P> {
    /// One event: handled, failed, in flight or stranded, each of its dispatches (the live
    /// one, then every replay, with when and how each ended) and whether its payload is kept.
    /// No receipt (never received, pruned, or from a workspace no tenant had linked) is
    /// `NotFound`.
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
        let replays = self.ports.jobs().attempts(&key).await?;
        let recorded = self.ports.ledger().attempts(&key).await?;
        let mut report = self.report(record);
        report.attempts = Attempt::history(&report.receipt, &report.status, replays, &recorded);
        Ok(report)
    }

    /// One event's kept payload, for a caller allowed to read the tenant's payloads
    /// ([`crate::KeyScope::payload_access`]: the key's permission and, for a read-only portal,
    /// its tenant's allowance as it is now); otherwise hidden, saying why. The permission is
    /// checked after access (a tenant the caller may not see is unknown, as everywhere) and
    /// before anything is read: a caller not allowed never has the payload opened for it.
    pub async fn event_payload(
        &self,
        caller: &Caller,
        tenant: TenantId,
        event_id: ExternalEventId,
    ) -> Result<PayloadView, OperatorError> {
        let record = self.visible(caller, tenant).await?;
        if let Err(why) = caller.actor.payload_access(&record) {
            return Ok(PayloadView::Hidden(why));
        }
        let key = ReceiptKey { tenant, platform: Platform::Slack, external_id: event_id };
        Ok(match self.ports.ledger().payload(&key).await? {
            Some(payload) => PayloadView::Shown(payload),
            None => PayloadView::Hidden(PayloadHidden::NotKept),
        })
    }

    /// Handled (newest claim first), failed (newest failure first), in flight or stranded
    /// (oldest first) events, or (`None`) events in every state, newest claim first: of one
    /// tenant, or (a caller for every tenant) of all.
    pub async fn events(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
        state: Option<EventState>,
        query: EventQuery,
        page: &PageRequest<EventCursor>,
    ) -> Result<Page<EventReport, EventCursor>, OperatorError> {
        let tenant = self.scoped(caller, tenant).await?;
        let filter = self.event_filter(state, query);
        let found = self.ports.ledger().list(tenant, &filter, page).await?;
        Ok(found.map(|record| self.report(record)))
    }

    /// How many events `events` lists with the same arguments, over all its pages: exact up to
    /// [`Total::CAP`], else "more than" it (at most `CAP + 1` rows are read to know).
    pub async fn events_total(
        &self,
        caller: &Caller,
        tenant: Option<TenantId>,
        state: Option<EventState>,
        query: EventQuery,
    ) -> Result<Total, OperatorError> {
        let tenant = self.scoped(caller, tenant).await?;
        let filter = self.event_filter(state, query);
        let counted = self.ports.ledger().count(tenant, &filter, Total::CAP + 1).await?;
        Ok(Total::of_counted(counted))
    }

    /// A replay of the events the listing of `state` with `query` selects (failed or stranded
    /// only), the first `limit` of them by claim time, oldest first: the same filter as the
    /// list, so no event outside what a person filtered is sent. The list shows the newest
    /// first, so with more than `limit` the ones sent are not those at its top; the preview
    /// names them.
    pub fn replay_matching(
        &self,
        state: EventState,
        query: EventQuery,
        limit: u32,
    ) -> Result<ReplaySelection, SelectionRefused> {
        ReplaySelection::matching(self.event_filter(Some(state), query), limit)
    }

    fn event_filter(&self, state: Option<EventState>, query: EventQuery) -> EventFilter {
        EventFilter {
            state,
            since: query.since,
            until: query.until,
            event_type: query.event_type.map(|t| t.as_str().to_owned()),
            stranded_before: self.stranded_before(),
        }
    }

    /// Every event numbered `event_id` among the tenants the caller may see: a scoped
    /// caller's own tenant only, every tenant for a caller that sees them all. Each with its
    /// tenant (id and name) and its status now. An id is tenant-local (decision 4), so two
    /// tenants may each have one; none is an empty answer, not `NotFound` (a search that
    /// finds nothing is no error). Ordered by tenant name, then id.
    pub async fn find_events(
        &self,
        caller: &Caller,
        event_id: &ExternalEventId,
    ) -> Result<Vec<EventMatch>, OperatorError> {
        let tenant = self.scoped(caller, None).await?;
        let found = self.ports.ledger().find(tenant, Platform::Slack, event_id).await?;
        let now = self.ports.clock().now();
        Ok(found
            .into_iter()
            // The port's contract already keeps a scoped caller to its tenant; checked again
            // here, where the access rule lives, so a wrong adapter cannot show another's.
            .filter(|found| caller.actor.may_see(found.receipt.key.tenant))
            .map(|found| EventMatch {
                status: found.receipt.status(now, self.settings.stranded_after),
                tenant_name: found.tenant_name,
                receipt: found.receipt,
            })
            .collect())
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
        EventReport {
            receipt: record.receipt,
            status,
            payload_kept: record.payload_kept,
            attempts: Vec::new(),
        }
    }
}

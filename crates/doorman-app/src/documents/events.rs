//! What became of events, and of their replays: each event with its dispatches, replay jobs
//! with each event's outcome, and the report of a replay the command line ran.

use chrono::{DateTime, Utc};
use doorman_adapters::bridge::request;
use doorman_domain::{
    AgentUrl, Attempt, EventMatch, EventReport, PayloadView, ReplayJob, Replayed, TenantId,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::words;

super::counted_page_of!(
    /// A page of events, and how many the listing selects.
    EventPage,
    EventDoc
);

super::list_of!(
    /// The events found by an id, one per tenant that has it, by tenant name: never more than
    /// the tenants the key may see, so never paged.
    EventMatchList,
    EventMatchDoc
);

/// An event found by its id (support's search across tenants): whose it is, and what became
/// of it. Its whole story is at `GET /admin/v1/tenants/{tenant_id}/events/{external_event_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventMatchDoc {
    pub tenant_id: Uuid,
    pub tenant_name: String,
    pub platform: String,
    pub external_event_id: String,
    pub event_type: String,
    /// `stranded`: unfinished for over 10 minutes.
    #[schema(value_type = words::EventStatus)]
    pub status: String,
    pub claimed_at: DateTime<Utc>,
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<FailureDoc>,
}

impl From<EventMatch> for EventMatchDoc {
    fn from(found: EventMatch) -> Self {
        let r = found.receipt;
        Self {
            tenant_id: *r.key.tenant.as_uuid(),
            tenant_name: found.tenant_name,
            platform: r.key.platform.as_str().to_owned(),
            external_event_id: r.key.external_id.as_str().to_owned(),
            event_type: r.event_type,
            status: found.status.as_str().to_owned(),
            claimed_at: r.claimed_at,
            handled_at: r.handled_at,
            failure: r.failure.map(|f| FailureDoc { reason: f.reason, at: f.at }),
        }
    }
}

/// Why an event's last dispatch failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FailureDoc {
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// What became of one event (`receipts show --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventDoc {
    pub tenant_id: Uuid,
    pub platform: String,
    pub external_event_id: String,
    pub event_type: String,
    /// The delivery attempt it was claimed on (0: Slack's first).
    pub delivery_attempt: u32,
    pub claimed_at: DateTime<Utc>,
    pub handled_at: Option<DateTime<Utc>>,
    pub failure: Option<FailureDoc>,
    /// `stranded`: unfinished for over 10 minutes.
    #[schema(value_type = words::EventStatus)]
    pub status: String,
    /// The live dispatch, each redelivery and each replay.
    pub dispatches: u32,
    pub replays: u32,
    /// Redeliveries taken (its tenant's redelivery is on: ADR 26).
    pub redeliveries: u32,
    /// When its spent redelivery schedule was given up: it stays failed.
    pub gave_up_at: Option<DateTime<Utc>>,
    /// Its payload is kept (sealed), so it can be replayed.
    pub payload_kept: bool,
    /// Each dispatch, oldest first: the live one, each redelivery, every replay, with when and how it
    /// ended. Only when one event is read; a listing leaves it empty.
    pub attempts: Vec<AttemptDoc>,
}

/// One event as `GET /admin/v1/tenants/{id}/events/{event_id}` and the console's event page
/// show it: what became of it (the fields `receipts show --json` prints), the request Doorman
/// sends its agent, and its kept payload for a key allowed to read payloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventDetailDoc {
    #[serde(flatten)]
    pub event: EventDoc,
    /// The request Doorman sends the tenant's agent for this event: to the agent as it is now
    /// (a dispatch made before the agent was last set went to the one set then), each header
    /// in the order it is written, the signature redacted, never a secret. `null` when the
    /// tenant has no agent.
    pub request: Option<RequestDoc>,
    /// The payload Slack sent, as the JSON text the tenant keeps (sealed) for replay or
    /// redelivery, its verification `token` redacted: only for a key allowed to read payloads
    /// (`read_payloads`; a read-only portal key only while its tenant lets its read-only
    /// portals read them). `null` otherwise, and `payload_hidden` says why.
    pub payload: Option<String>,
    /// Why `payload` is `null`: `not_kept` (the tenant keeps none for it: it keeps payloads
    /// neither for replay nor for redelivery, or the event was handled), `not_allowed` (the
    /// key may not read payloads) or `not_allowed_by_tenant` (a read-only portal key made with
    /// `read_payloads`, whose tenant has not let its read-only portals read them). `null` when
    /// `payload` is shown.
    #[schema(value_type = Option<words::PayloadHidden>)]
    pub payload_hidden: Option<String>,
}

impl EventDetailDoc {
    /// The event's document, its request to `agent` (the tenant's now, if it has one), and its
    /// payload as the caller may see it (`None`: not read, neither shown nor said why).
    pub fn new(report: EventReport, agent: Option<&AgentUrl>, payload: Option<PayloadView>) -> Self {
        let id = report.receipt.key.external_id.clone();
        let (payload, payload_hidden) = match payload {
            Some(PayloadView::Shown(kept)) => (Some(kept.expose().to_owned()), None),
            Some(PayloadView::Hidden(why)) => (None, Some(why.as_str().to_owned())),
            None => (None, None),
        };
        Self {
            event: EventDoc::from(report),
            request: agent.map(|url| RequestDoc {
                method: request::METHOD.to_owned(),
                url: url.as_str().to_owned(),
                headers: request::shown(url, &id)
                    .into_iter()
                    .map(|h| HeaderDoc { name: h.name.to_owned(), value: h.value, redacted: h.redacted })
                    .collect(),
            }),
            payload,
            payload_hidden,
        }
    }
}

/// A payload's JSON indented for reading (its members then in name order); as it is if it is
/// not JSON. The console's event page and `doorman receipts show --payload` show it so.
pub fn indented(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .and_then(|value| serde_json::to_string_pretty(&value))
        .unwrap_or_else(|_| json.to_owned())
}

/// The request Doorman sends an agent for an event (`docs/dispatch-contract.md`), with its
/// body, the dispatch document, left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RequestDoc {
    #[schema(example = "POST")]
    pub method: String,
    /// The tenant's agent URL as it is set now, whole.
    pub url: String,
    /// Each header, in the order it is written.
    pub headers: Vec<HeaderDoc>,
}

/// One header of the request Doorman sends an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HeaderDoc {
    #[schema(example = "webhook-id")]
    pub name: String,
    /// As sent; in parentheses, what a value set for each request is
    /// (`(Unix seconds when each attempt is signed)`); `v1,… (redacted)` for the signature.
    #[schema(example = "evt_Ev0PV52K25")]
    pub value: String,
    /// The value is withheld: the signature, which would let whoever reads it replay the
    /// request.
    pub redacted: bool,
}

/// One dispatch of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AttemptDoc {
    #[schema(value_type = words::AttemptKind)]
    pub kind: String,
    /// The replay job it was part of.
    pub job_id: Option<Uuid>,
    /// When the request was sent (to the millisecond); for a dispatch not on record, when the
    /// event was claimed.
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The live dispatch: as the event's status; a replay: its outcome, or `running`.
    #[schema(value_type = words::AttemptOutcome)]
    pub outcome: String,
    pub detail: Option<String>,
    /// The agent's HTTP status, when it answered and the attempt is on record.
    pub status: Option<u16>,
    /// Why it did not end in a 2xx, when it is on record.
    #[schema(value_type = Option<words::FailureKind>)]
    pub failure: Option<String>,
    /// From the request sent to the agent's answer (or the failure), when it is on record.
    pub latency_ms: Option<i64>,
    /// The first KiB of the agent's answer body, as text (failed attempts).
    pub answer: Option<String>,
}

impl From<Attempt> for AttemptDoc {
    fn from(a: Attempt) -> Self {
        let answer = a.answer.as_ref();
        Self {
            kind: match (a.replay, a.redelivery) {
                (true, _) => "replay",
                (false, true) => "redelivery",
                (false, false) => "live",
            }
            .to_owned(),
            job_id: a.job.map(|j| *j.as_uuid()),
            started_at: a.started_at,
            ended_at: a.ended_at,
            outcome: a.outcome,
            detail: a.detail,
            status: answer.and_then(|answer| answer.status),
            failure: answer.and_then(|answer| answer.failure).map(|kind| kind.as_str().to_owned()),
            latency_ms: answer.map(|answer| answer.latency_ms),
            answer: a.answer.and_then(|answer| answer.body),
        }
    }
}

/// A replay job: what was asked, by whom, its progress, and each event's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayJobDoc {
    pub id: Uuid,
    pub tenant_id: Uuid,
    #[schema(value_type = words::JobState)]
    pub state: String,
    /// What it selected, in words (`failed since …`, `stranded before …`, `event Ev…`).
    pub selection: String,
    pub requested_by: ActorDoc,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Events selected.
    pub total: u32,
    /// Events with an outcome.
    pub done: u32,
    /// Events the agent took.
    pub succeeded: u32,
    /// Each event in order (empty in a listing of jobs).
    pub events: Vec<JobEventDoc>,
}

/// Who did something, as the audit trail names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActorDoc {
    #[schema(value_type = words::ActorKind)]
    pub kind: String,
    /// The key's id, or the OS user.
    pub id: String,
    /// The key's name, or `cli`.
    pub name: String,
}

/// One event of a replay job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct JobEventDoc {
    pub external_event_id: String,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// `null` until it has been tried.
    #[schema(value_type = Option<words::ReplayOutcome>)]
    pub outcome: Option<String>,
    pub detail: Option<String>,
}

impl From<ReplayJob> for ReplayJobDoc {
    fn from(job: ReplayJob) -> Self {
        let by = doorman_domain::AuditEntry::new(
            &job.requested_by,
            doorman_domain::AuditAction::EventsReplay,
            None,
            None,
        );
        Self {
            id: *job.id.as_uuid(),
            tenant_id: *job.tenant.as_uuid(),
            state: job.state().as_str().to_owned(),
            selection: job.selection,
            requested_by: ActorDoc {
                kind: by.actor_kind().to_owned(),
                id: by.actor_id(),
                name: by.actor_name(),
            },
            created_at: job.created_at,
            started_at: job.started_at,
            finished_at: job.finished_at,
            total: job.total,
            done: job.done,
            succeeded: job.succeeded,
            events: job
                .events
                .into_iter()
                .map(|e| JobEventDoc {
                    external_event_id: e.external_id.as_str().to_owned(),
                    started_at: e.started_at,
                    ended_at: e.ended_at,
                    outcome: e.outcome,
                    detail: e.detail,
                })
                .collect(),
        }
    }
}

impl From<EventReport> for EventDoc {
    fn from(report: EventReport) -> Self {
        let r = &report.receipt;
        Self {
            tenant_id: *r.key.tenant.as_uuid(),
            platform: r.key.platform.as_str().to_owned(),
            external_event_id: r.key.external_id.as_str().to_owned(),
            event_type: r.event_type.clone(),
            delivery_attempt: r.attempt,
            claimed_at: r.claimed_at,
            handled_at: r.handled_at,
            failure: r.failure.as_ref().map(|f| FailureDoc { reason: f.reason.clone(), at: f.at }),
            status: report.status.as_str().to_owned(),
            dispatches: r.dispatches(),
            replays: r.replays,
            redeliveries: r.redeliveries,
            gave_up_at: r.gave_up_at,
            payload_kept: report.payload_kept,
            attempts: report.attempts.into_iter().map(AttemptDoc::from).collect(),
        }
    }
}

/// What a replay did, event by event (`receipts replay --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayReport {
    pub tenant_id: Uuid,
    pub dry_run: bool,
    pub selected: usize,
    /// Handled by the agent (or, in a dry run, would be sent).
    pub succeeded: usize,
    pub events: Vec<ReplayedDoc>,
}

/// One event's replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayedDoc {
    pub external_event_id: String,
    #[schema(value_type = words::ReplayOutcome)]
    pub outcome: String,
    pub detail: String,
}

impl ReplayReport {
    /// A finished job's report (what the command line prints after running one).
    pub fn of_job(job: &ReplayJob) -> Self {
        Self {
            tenant_id: *job.tenant.as_uuid(),
            dry_run: false,
            selected: job.total as usize,
            succeeded: job.succeeded as usize,
            events: job
                .events
                .iter()
                .map(|e| ReplayedDoc {
                    external_event_id: e.external_id.as_str().to_owned(),
                    outcome: e.outcome.clone().unwrap_or_else(|| "not_sent".into()),
                    detail: e.detail.clone().unwrap_or_else(|| "not tried: the job stopped first".into()),
                })
                .collect(),
        }
    }

    pub fn new(tenant: TenantId, dry_run: bool, report: &[Replayed]) -> Self {
        Self {
            tenant_id: *tenant.as_uuid(),
            dry_run,
            selected: report.len(),
            succeeded: report.iter().filter(|r| r.outcome.is_success()).count(),
            events: report
                .iter()
                .map(|r| ReplayedDoc {
                    external_event_id: r.key.external_id.as_str().to_owned(),
                    outcome: r.outcome.as_str().to_owned(),
                    detail: r.outcome.detail(),
                })
                .collect(),
        }
    }
}

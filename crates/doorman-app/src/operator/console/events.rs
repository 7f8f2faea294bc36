//! Events and replays: an event found by its Slack id in every tenant the session sees, a
//! tenant's events by state, time and type (paged), one event with each of its dispatches and
//! replays, the request sent to its agent and (for a session allowed) its payload, replaying
//! it as a job, a bulk retry (the ticked rows of a list, or everything its
//! filter shows) previewed and then started as a job, and the jobs with their progress.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::{DateTime, NaiveDateTime, Utc};
use doorman_domain::usecases::operator::events::EventQuery;
use doorman_domain::{
    EventCursor, EventState, ExternalEventId, JobCursor, MAX_REPLAY_EVENTS, OperatorError, ReplayJobId,
    ReplaySelection, SelectionRefused, TenantId,
};

use super::form::Form;
use super::page::{self, Chrome};
use super::session::Session;
use super::{ConsoleError, see_other};
use crate::documents::{EventDoc, EventMatchDoc, ReplayJobDoc, RequestDoc, TenantDoc, indented};
use crate::event_detail;
use crate::operator::params::{event_path, event_search, event_type, tenant_path};
use crate::operator::problem::ApiError;
use crate::operator::query::Query;
use crate::operator::state::AdminState;

#[derive(Template)]
#[template(path = "console/events.html")]
struct EventsPage {
    chrome: Chrome,
    tenant: TenantDoc,
    state: &'static str,
    /// Each state's word, then `all`.
    states: Vec<&'static str>,
    since: String,
    until: String,
    event_type: String,
    events: Vec<EventDoc>,
    next: Option<String>,
    /// How many match, over every page: "1,000 events", or "more than 1,000".
    total: String,
    /// Whether the list offers a bulk retry: failed or stranded events of a tenant that keeps
    /// payloads (for replay or for redelivery). A read-only session may preview one.
    bulk: bool,
}

#[derive(Template)]
#[template(path = "console/find.html")]
struct FindPage {
    chrome: Chrome,
    event_id: String,
    /// `None` before a search (the form alone).
    found: Option<Vec<EventMatchDoc>>,
}

#[derive(Template)]
#[template(path = "console/event.html")]
struct EventPage {
    chrome: Chrome,
    tenant: TenantDoc,
    event: EventDoc,
    /// The request Doorman sends the tenant's agent now; `None` without an agent.
    request: Option<RequestDoc>,
    /// The kept payload, for a session whose key may read payloads.
    payload: Option<String>,
    /// Why it is not shown (`not_kept`, `not_allowed`).
    payload_hidden: Option<String>,
}

#[derive(Template)]
#[template(path = "console/replay_preview.html")]
struct PreviewPage {
    chrome: Chrome,
    tenant: TenantDoc,
    /// What was asked, in the words its job and audit entry will have.
    described: String,
    selected: usize,
    /// How many would be sent (the others would be refused, each saying why).
    would: usize,
    /// A filter's limit was reached: more may match than this job takes.
    limit_reached: bool,
    events: Vec<PreviewRow>,
    asked: BulkFields,
}

struct PreviewRow {
    external_event_id: String,
    outcome: &'static str,
    detail: String,
}

/// A bulk retry form's fields as posted, carried to the form that confirms it.
struct BulkFields {
    event_ids: Vec<String>,
    state: String,
    event_type: String,
    since: String,
    until: String,
    limit: String,
}

#[derive(Template)]
#[template(path = "console/jobs.html")]
struct JobsPage {
    chrome: Chrome,
    tenant: TenantDoc,
    jobs: Vec<ReplayJobDoc>,
    next: Option<String>,
}

#[derive(Template)]
#[template(path = "console/job.html")]
struct JobPage {
    chrome: Chrome,
    tenant: TenantDoc,
    job: ReplayJobDoc,
}

/// `?event_id=`: the events of that whole Slack id in every tenant the session sees (a
/// customer's portal: its own tenant's), each linking to its page. Without one, the form.
pub async fn find(request: HttpRequest, state: web::Data<AdminState>) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let query = Query::of(&request);
    // Pasted ids often carry a space or a line's end; no platform's id begins or ends so.
    let event_id = query.get("event_id").map(str::trim).unwrap_or_default().to_owned();
    let found = if event_id.is_empty() {
        None
    } else {
        Some(match event_search(Some(&event_id))? {
            Some(id) => state.operator.find_events(&session.caller, &id).await?,
            None => Vec::new(),
        })
    };
    page::ok(&FindPage {
        chrome: session.chrome(&request),
        event_id,
        found: found.map(|found| found.into_iter().map(EventMatchDoc::from).collect()),
    })
}

/// The console's word for the list of events in every state.
const ALL_STATES: &str = "all";

/// `state` (failed by default; `all`: every state, newest claim first), `since` and `until` (RFC 3339, or a browser's
/// `2026-12-01T10:00` read as UTC), `type`, `cursor`.
pub async fn list(
    request: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let tenant = tenant_path(&path)?;
    let record = state.operator.tenant(&session.caller, tenant).await?;
    let query = Query::of(&request);
    // `all`: one list of every event, whatever became of it, newest claim first.
    let which = match query.get("state").unwrap_or("failed") {
        ALL_STATES => None,
        word => Some(EventState::parse(word).map_err(|e| ApiError::invalid_value("state", &e))?),
    };
    let word = which.map_or(ALL_STATES, EventState::as_str);
    let text = |name| query.get(name).map(str::trim).unwrap_or_default().to_owned();
    let (since, until, kind) = (text("since"), text("until"), text("type"));
    let filter = EventQuery {
        since: instant("since", &since)?,
        until: instant("until", &until)?,
        event_type: event_type((!kind.is_empty()).then_some(kind.as_str()))?,
    };
    let page = query.page::<EventCursor>()?;
    let listed = state.operator.events(&session.caller, Some(tenant), which, filter.clone(), &page).await?;
    let total = state.operator.events_total(&session.caller, Some(tenant), which, filter).await?;
    let filters = [("state", word), ("since", &since), ("until", &until), ("type", &kind)];
    let next = listed.next.map(|cursor| page::next_page(&filters, &cursor));
    let tenant = TenantDoc::from(record);
    let bulk = matches!(which, Some(EventState::Failed | EventState::Stranded))
        && (tenant.retain_payloads || tenant.redelivery.is_some());
    page::ok(&EventsPage {
        chrome: session.chrome(&request),
        tenant,
        bulk,
        state: word,
        states: [EventState::Handled, EventState::Failed, EventState::InFlight, EventState::Stranded]
            .map(EventState::as_str)
            .into_iter()
            .chain([ALL_STATES])
            .collect(),
        since,
        until,
        event_type: kind,
        events: listed.items.into_iter().map(EventDoc::from).collect(),
        next,
        total: page::total(total, "event", "events"),
    })
}

/// An instant from a filter field: RFC 3339, or what a `datetime-local` input sends (UTC).
pub(super) fn instant(field: &str, raw: &str) -> Result<Option<DateTime<Utc>>, ConsoleError> {
    if raw.is_empty() {
        return Ok(None);
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(Some(at.with_timezone(&Utc)));
    }
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(raw, format).ok())
        .map(|at| Some(at.and_utc()))
        .ok_or_else(|| {
            ConsoleError::bad_request(format!(
                "{field}: must be a date and time, like 2026-12-01T10:00 (UTC)"
            ))
        })
}

pub async fn show(
    request: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let (tenant, event) = path.into_inner();
    let tenant = tenant_path(&tenant)?;
    let record = state.operator.tenant(&session.caller, tenant).await?;
    let id = event_path(&event)?;
    let detail = match event_detail::read(&state.operator, &session.caller, tenant, id).await {
        Ok(detail) => detail,
        Err(OperatorError::NotFound { .. }) => {
            return Err(ConsoleError::not_found(format!(
                "no receipt for event {event}: never received, pruned after the retention, or from a workspace no tenant had linked"
            )));
        }
        Err(other) => return Err(other.into()),
    };
    page::ok(&EventPage {
        chrome: session.chrome(&request),
        tenant: TenantDoc::from(record),
        event: detail.event,
        request: detail.request,
        payload: detail.payload.map(|json| indented(&json)),
        payload_hidden: detail.payload_hidden,
    })
}

/// Replays one event as a job, then shows the job.
pub async fn replay_one(
    request: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let (tenant, event) = path.into_inner();
    let tenant = tenant_path(&tenant)?;
    session.form(&request, &body)?;
    start(&session, &state, tenant, ReplaySelection::Event(event_path(&event)?)).await
}

/// A bulk retry's preview: what a replay of the form's selection ([`bulk_selection`]) would
/// do, event by event, sending nothing (a read-only session may look), with the form that
/// starts it carrying the same selection.
pub async fn replay_preview(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, selection, asked) = bulk_form(&request, &path, &body, &state).await?;
    let record = state.operator.tenant(&session.caller, tenant).await?;
    let report = state.replays.dry_run(&state.operator, &session.caller, tenant, &selection).await?;
    let would = report.iter().filter(|replayed| replayed.outcome.is_success()).count();
    let limit_reached =
        matches!(&selection, ReplaySelection::Matching { limit, .. } if report.len() >= *limit as usize);
    page::ok(&PreviewPage {
        chrome: session.chrome(&request),
        tenant: TenantDoc::from(record),
        described: selection.describe(),
        selected: report.len(),
        would,
        limit_reached,
        events: report
            .iter()
            .map(|replayed| PreviewRow {
                external_event_id: replayed.key.external_id.to_string(),
                outcome: replayed.outcome.as_str(),
                detail: replayed.outcome.detail(),
            })
            .collect(),
        asked,
    })
}

/// Starts a bulk retry (the preview's form): the form's selection ([`bulk_selection`]) as one
/// replay job, audited with it; then shows the job.
pub async fn replay_selected(
    request: HttpRequest,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let (session, tenant, selection, _) = bulk_form(&request, &path, &body, &state).await?;
    start(&session, &state, tenant, selection).await
}

/// A bulk retry form, read in the order every form is: the session, the tenant in the path,
/// the form (its origin and token), then the selection it names ([`bulk_selection`]) with the
/// fields as posted.
async fn bulk_form(
    request: &HttpRequest,
    path: &str,
    body: &[u8],
    state: &AdminState,
) -> Result<(Session, TenantId, ReplaySelection, BulkFields), ConsoleError> {
    let session = Session::of(request, state).await?;
    let tenant = tenant_path(path)?;
    let form = session.form(request, body)?;
    let (selection, asked) = bulk_selection(&form, state)?;
    Ok((session, tenant, selection, asked))
}

/// The events a bulk retry form names: the ticked rows of a list (`event_id`, repeated), or,
/// with none ticked, the list's own filter (`state`, failed or stranded; `type`, `since`,
/// `until`, as the list reads them) and `limit` (1 to 1,000; 1,000 when blank). With it, the
/// fields as posted, for the form that confirms the same selection.
fn bulk_selection(form: &Form, state: &AdminState) -> Result<(ReplaySelection, BulkFields), ConsoleError> {
    let ticked = form.all("event_id");
    let text = |name| form.get(name).unwrap_or_default().to_owned();
    let asked = BulkFields {
        event_ids: ticked.iter().map(|id| (*id).to_owned()).collect(),
        state: text("state"),
        event_type: text("type"),
        since: text("since"),
        until: text("until"),
        limit: text("limit"),
    };
    let refused = |refused: SelectionRefused| ConsoleError::bad_request(refused.to_string());
    if !ticked.is_empty() || asked.state.is_empty() {
        let ids = ticked
            .iter()
            .map(|raw| {
                ExternalEventId::new(*raw)
                    .map_err(|_| ConsoleError::bad_request(format!("event_id: {raw:?} is not an event id")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((ReplaySelection::chosen(ids).map_err(refused)?, asked));
    }
    let which = EventState::parse(&asked.state).map_err(|e| ApiError::invalid_value("state", &e))?;
    let query = EventQuery {
        since: instant("since", &asked.since)?,
        until: instant("until", &asked.until)?,
        event_type: event_type(form.get("type"))?,
    };
    let limit = match form.get("limit") {
        None => MAX_REPLAY_EVENTS,
        Some(raw) => raw.parse().map_err(|_| refused(SelectionRefused::Limit))?,
    };
    let selection = state.operator.replay_matching(which, query, limit).map_err(refused)?;
    Ok((selection, asked))
}

async fn start(
    session: &Session,
    state: &AdminState,
    tenant: TenantId,
    selection: ReplaySelection,
) -> Result<HttpResponse, ConsoleError> {
    let job = state.replays.start(&state.operator, &session.caller, tenant, &selection).await?;
    Ok(see_other(format!("/console/tenants/{tenant}/replays/{}", job.id)))
}

pub async fn jobs(
    request: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let tenant = tenant_path(&path)?;
    let record = state.operator.tenant(&session.caller, tenant).await?;
    let page = Query::of(&request).page::<JobCursor>()?;
    let listed = state.operator.replay_jobs(&session.caller, tenant, &page).await?;
    let next = listed.next.map(|cursor| page::next_page(&[], &cursor));
    page::ok(&JobsPage {
        chrome: session.chrome(&request),
        tenant: TenantDoc::from(record),
        jobs: listed.items.into_iter().map(ReplayJobDoc::from).collect(),
        next,
    })
}

pub async fn job(
    request: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> Result<HttpResponse, ConsoleError> {
    let session = Session::of(&request, &state).await?;
    let (tenant, job) = path.into_inner();
    let tenant = tenant_path(&tenant)?;
    let job: ReplayJobId =
        job.parse().map_err(|_| ConsoleError::not_found(format!("no replay job {job}")))?;
    let record = state.operator.tenant(&session.caller, tenant).await?;
    let job = state.operator.replay_job(&session.caller, tenant, job).await?;
    page::ok(&JobPage {
        chrome: session.chrome(&request),
        tenant: TenantDoc::from(record),
        job: ReplayJobDoc::from(job),
    })
}

/// For the templates: a replay job's progress in words. How many of its events are done, how
/// many of those the agent took, and, when the job's events are listed, how each ended in the
/// words of its outcome: `1 of 1 done: 0 succeeded (1 failed)`.
impl ReplayJobDoc {
    pub fn progress(&self) -> String {
        let done = format!("{} of {} done: {} succeeded", self.done, self.total, self.succeeded);
        let mut outcomes: Vec<(&str, u32)> = Vec::new();
        for outcome in self.events.iter().filter_map(|e| e.outcome.as_deref()) {
            match outcomes.iter_mut().find(|(seen, _)| *seen == outcome) {
                Some((_, count)) => *count += 1,
                None => outcomes.push((outcome, 1)),
            }
        }
        if outcomes.is_empty() {
            return match self.done.saturating_sub(self.succeeded) {
                0 => done,
                rest => format!("{done}, {rest} did not"),
            };
        }
        let each: Vec<String> = outcomes
            .iter()
            .map(|(outcome, count)| format!("{count} {}", outcome.replace('_', " ")))
            .collect();
        format!("{done} ({})", each.join(", "))
    }
}

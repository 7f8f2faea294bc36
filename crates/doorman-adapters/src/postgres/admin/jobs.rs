//! Replay jobs: the job and its events, written when an operator asks; taken and run by one
//! admin process at a time (a hold that it renews, so another process resumes a job whose
//! holder stopped); each event's outcome written with its audit entry.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use doorman_domain::ports::ReplayJobs;
use doorman_domain::{
    AuditEntry, Caller, ExternalEventId, Failure, JobCursor, JobEvent, NewReplayJob, Page, PageRequest,
    ReceiptKey, ReplayAttempt, ReplayJob, ReplayJobId, ReplayOutcome, ReplayResult, StorageError, TenantId,
};
use uuid::Uuid;

use super::audit;
use crate::postgres::errors::from_diesel;
use crate::postgres::pool::{PgPool, across_tenants, act_for};
use crate::postgres::schema::{admin_replay_job_events as job_events, admin_replay_jobs as jobs};

#[derive(Debug, Clone)]
pub struct PgReplayJobs {
    pool: PgPool,
}

impl PgReplayJobs {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

/// A job row and its progress (counted from its events).
#[derive(QueryableByName)]
struct JobRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    tenant_id: Uuid,
    #[diesel(sql_type = Text)]
    selection: String,
    #[diesel(sql_type = Text)]
    actor_kind: String,
    #[diesel(sql_type = Text)]
    actor_id: String,
    #[diesel(sql_type = Text)]
    actor_name: String,
    #[diesel(sql_type = Text)]
    request_id: String,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    started_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    finished_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Integer)]
    total: i32,
    #[diesel(sql_type = Integer)]
    done: i32,
    #[diesel(sql_type = Integer)]
    succeeded: i32,
}

/// The job's columns and its counts: `done` has an outcome; `succeeded` was taken by the agent.
const JOB_SELECT: &str = "SELECT j.id, j.tenant_id, j.selection, j.actor_kind, j.actor_id, j.actor_name, j.request_id, \
            j.created_at, j.started_at, j.finished_at, \
            (SELECT count(*)::int FROM admin_replay_job_events e WHERE e.job_id = j.id) AS total, \
            (SELECT count(*)::int FROM admin_replay_job_events e WHERE e.job_id = j.id AND e.outcome IS NOT NULL) AS done, \
            (SELECT count(*)::int FROM admin_replay_job_events e WHERE e.job_id = j.id \
                AND e.outcome IN ('handled', 'handled_unrecorded')) AS succeeded \
       FROM admin_replay_jobs j";

impl JobRow {
    fn into_job(self, events: Vec<JobEvent>) -> Result<ReplayJob, StorageError> {
        let tenant = TenantId::from_uuid(self.tenant_id);
        let requested_by =
            Caller::recorded(&self.actor_kind, &self.actor_id, &self.actor_name, &self.request_id, tenant)
                .ok_or_else(|| StorageError::Unexpected(format!("replay job {} names no actor", self.id)))?;
        let count = |n: i32| u32::try_from(n).unwrap_or(0);
        Ok(ReplayJob {
            id: ReplayJobId::from_uuid(self.id),
            tenant,
            selection: self.selection,
            requested_by,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            total: count(self.total),
            done: count(self.done),
            succeeded: count(self.succeeded),
            events,
        })
    }
}

type EventRow = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>, Option<String>, Option<String>);

fn event_id(raw: String) -> Result<ExternalEventId, StorageError> {
    ExternalEventId::new(raw).map_err(|e| StorageError::Unexpected(format!("a stored replay job event: {e}")))
}

async fn job_row(
    conn: &mut AsyncPgConnection,
    id: ReplayJobId,
) -> Result<Option<JobRow>, diesel::result::Error> {
    diesel::sql_query(format!("{JOB_SELECT} WHERE j.id = $1"))
        .bind::<SqlUuid, _>(id.as_uuid())
        .get_result(conn)
        .await
        .optional()
}

/// Marks the job finished: no process holds it any more.
async fn finished(conn: &mut AsyncPgConnection, id: ReplayJobId) -> Result<(), diesel::result::Error> {
    diesel::update(jobs::table.filter(jobs::id.eq(id.as_uuid())))
        .set((jobs::finished_at.eq(diesel::dsl::now), jobs::runner_until.eq(None::<DateTime<Utc>>)))
        .execute(conn)
        .await
        .map(drop)
}

impl ReplayJobs for PgReplayJobs {
    async fn create(&self, job: &NewReplayJob, audit: &AuditEntry) -> Result<(), StorageError> {
        let by = AuditEntry::new(&job.requested_by, audit.action, Some(job.tenant), None);
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, job.tenant).await?;
                diesel::insert_into(jobs::table)
                    .values((
                        jobs::id.eq(job.id.as_uuid()),
                        jobs::tenant_id.eq(job.tenant.as_uuid()),
                        jobs::selection.eq(&job.selection),
                        jobs::actor_kind.eq(by.actor_kind()),
                        jobs::actor_id.eq(by.actor_id()),
                        jobs::actor_name.eq(by.actor_name()),
                        jobs::request_id.eq(job.requested_by.request.as_str()),
                        jobs::runner_until.eq(job.held_until),
                        jobs::started_at.eq(job.held_until.map(|_| Utc::now())),
                    ))
                    .execute(conn)
                    .await?;
                let rows: Vec<_> = job
                    .events
                    .iter()
                    .enumerate()
                    .map(|(position, event)| {
                        (
                            job_events::job_id.eq(*job.id.as_uuid()),
                            job_events::position.eq(i32::try_from(position).unwrap_or(i32::MAX)),
                            job_events::tenant_id.eq(*job.tenant.as_uuid()),
                            job_events::platform.eq("slack"),
                            job_events::external_event_id.eq(event.as_str()),
                        )
                    })
                    .collect();
                // In chunks: one statement's parameters are bounded (65,535).
                for chunk in rows.chunks(5_000) {
                    diesel::insert_into(job_events::table).values(chunk).execute(conn).await?;
                }
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn get(&self, tenant: TenantId, id: ReplayJobId) -> Result<Option<ReplayJob>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let found = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let Some(row) = job_row(conn, id).await? else { return Ok(None) };
                let events: Vec<EventRow> = job_events::table
                    .filter(job_events::job_id.eq(id.as_uuid()))
                    .order(job_events::position.asc())
                    .select((
                        job_events::external_event_id,
                        job_events::started_at,
                        job_events::ended_at,
                        job_events::outcome,
                        job_events::detail,
                    ))
                    .load(conn)
                    .await?;
                Ok(Some((row, events)))
            })
            .await
            .map_err(from_diesel);
        let Some((row, events)) = unit.finish(found).await? else { return Ok(None) };
        let events = events
            .into_iter()
            .map(|(id, started_at, ended_at, outcome, detail)| {
                Ok(JobEvent { external_id: event_id(id)?, started_at, ended_at, outcome, detail })
            })
            .collect::<Result<Vec<_>, StorageError>>()?;
        row.into_job(events).map(Some)
    }

    async fn list(
        &self,
        tenant: TenantId,
        page: &PageRequest<JobCursor>,
    ) -> Result<Page<ReplayJob, JobCursor>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let page = page.clone();
        let rows = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                let (after_at, after_id) = match page.after {
                    Some(c) => (Some(c.created_at), Some(*c.id.as_uuid())),
                    None => (None, None),
                };
                diesel::sql_query(format!(
                    "{JOB_SELECT} WHERE j.tenant_id = $1 \
                       AND ($2::timestamptz IS NULL OR (j.created_at, j.id) < ($2, $3)) \
                     ORDER BY j.created_at DESC, j.id DESC LIMIT $4"
                ))
                .bind::<SqlUuid, _>(tenant.as_uuid())
                .bind::<Nullable<Timestamptz>, _>(after_at)
                .bind::<Nullable<SqlUuid>, _>(after_id)
                .bind::<diesel::sql_types::BigInt, _>(i64::from(page.limit.get()) + 1)
                .load::<JobRow>(conn)
                .await
            })
            .await
            .map_err(from_diesel);
        let rows = unit.finish(rows).await?;
        let jobs = rows.into_iter().map(|row| row.into_job(Vec::new())).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_overfetch(jobs, page.limit, |j: &ReplayJob| JobCursor {
            created_at: j.created_at,
            id: j.id,
        }))
    }

    /// Candidates are read across tenants (a transaction that says so); the one taken is
    /// taken acting for its tenant, by an UPDATE that only one process's can match.
    async fn take(&self, until: DateTime<Utc>) -> Result<Option<(TenantId, ReplayJobId)>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let taken = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                across_tenants(conn).await?;
                let candidates: Vec<(Uuid, Uuid)> = jobs::table
                    .filter(jobs::finished_at.is_null())
                    .filter(jobs::runner_until.is_null().or(jobs::runner_until.lt(diesel::dsl::now)))
                    .order((jobs::created_at.asc(), jobs::id.asc()))
                    .limit(8)
                    .select((jobs::id, jobs::tenant_id))
                    .load(conn)
                    .await?;
                Ok(candidates)
            })
            .await
            .map_err(from_diesel);
        let candidates = match taken {
            Ok(found) => found,
            Err(error) => return unit.finish(Err(error)).await,
        };
        for (id, tenant) in candidates {
            let tenant = TenantId::from_uuid(tenant);
            let won = unit
                .transaction::<_, diesel::result::Error, _>(async |conn| {
                    act_for(conn, tenant).await?;
                    diesel::update(
                        jobs::table
                            .filter(jobs::id.eq(id))
                            .filter(jobs::finished_at.is_null())
                            .filter(jobs::runner_until.is_null().or(jobs::runner_until.lt(diesel::dsl::now))),
                    )
                    .set((
                        jobs::runner_until.eq(until),
                        jobs::started_at
                            .eq(diesel::dsl::sql::<Nullable<Timestamptz>>("coalesce(started_at, now())")),
                    ))
                    .execute(conn)
                    .await
                })
                .await
                .map_err(from_diesel);
            match won {
                Ok(1) => return unit.finish(Ok(Some((tenant, ReplayJobId::from_uuid(id))))).await,
                Ok(_) => continue,
                Err(error) => return unit.finish(Err(error)).await,
            }
        }
        unit.finish(Ok(None)).await
    }

    async fn hold(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        until: DateTime<Utc>,
    ) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::update(jobs::table.filter(jobs::id.eq(id.as_uuid())))
                    .set(jobs::runner_until.eq(until))
                    .execute(conn)
                    .await
                    .map(drop)
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn pending(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
    ) -> Result<Vec<(u32, ExternalEventId)>, StorageError> {
        let mut unit = self.pool.unit().await?;
        let rows = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                job_events::table
                    .filter(job_events::job_id.eq(id.as_uuid()))
                    .filter(job_events::outcome.is_null())
                    .order(job_events::position.asc())
                    .select((job_events::position, job_events::external_event_id))
                    .load::<(i32, String)>(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        unit.finish(rows)
            .await?
            .into_iter()
            .map(|(position, event)| Ok((u32::try_from(position).unwrap_or(0), event_id(event)?)))
            .collect()
    }

    async fn record(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        position: u32,
        result: &ReplayResult,
        detail: &str,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::update(
                    job_events::table
                        .filter(job_events::job_id.eq(id.as_uuid()))
                        .filter(job_events::position.eq(i32::try_from(position).unwrap_or(i32::MAX))),
                )
                .set((
                    job_events::started_at.eq(result.started_at),
                    job_events::ended_at.eq(result.ended_at),
                    job_events::outcome.eq(result.outcome.as_str()),
                    job_events::detail.eq(detail),
                    job_events::failure_before.eq(result.failure_before.as_ref().map(|f| f.reason.as_str())),
                    job_events::failed_before_at.eq(result.failure_before.as_ref().map(|f| f.at)),
                ))
                .execute(conn)
                .await?;
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn refuse_pending(
        &self,
        tenant: TenantId,
        id: ReplayJobId,
        outcome: &ReplayOutcome,
        audit: &AuditEntry,
    ) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                diesel::update(
                    job_events::table
                        .filter(job_events::job_id.eq(id.as_uuid()))
                        .filter(job_events::outcome.is_null()),
                )
                .set((
                    job_events::ended_at.eq(diesel::dsl::now),
                    job_events::outcome.eq(outcome.as_str()),
                    job_events::detail.eq(outcome.detail()),
                ))
                .execute(conn)
                .await?;
                finished(conn, id).await?;
                audit::write(conn, audit).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn finish(&self, tenant: TenantId, id: ReplayJobId) -> Result<(), StorageError> {
        let mut unit = self.pool.unit().await?;
        let done = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, tenant).await?;
                finished(conn, id).await
            })
            .await
            .map_err(from_diesel);
        unit.finish(done).await
    }

    async fn attempts(&self, key: &ReceiptKey) -> Result<Vec<ReplayAttempt>, StorageError> {
        type Row = (
            Uuid,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<DateTime<Utc>>,
        );
        let mut unit = self.pool.unit().await?;
        let rows = unit
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                act_for(conn, key.tenant).await?;
                job_events::table
                    .inner_join(jobs::table)
                    .filter(job_events::tenant_id.eq(key.tenant.as_uuid()))
                    .filter(job_events::platform.eq(key.platform.as_str()))
                    .filter(job_events::external_event_id.eq(key.external_id.as_str()))
                    // Not yet started ones are a job's queue, not a replay of it yet.
                    .filter(job_events::started_at.is_not_null())
                    .order((job_events::started_at.asc(), jobs::created_at.asc()))
                    .select((
                        job_events::job_id,
                        job_events::started_at,
                        job_events::ended_at,
                        job_events::outcome,
                        job_events::detail,
                        job_events::failure_before,
                        job_events::failed_before_at,
                    ))
                    .load::<Row>(conn)
                    .await
            })
            .await
            .map_err(from_diesel);
        Ok(unit
            .finish(rows)
            .await?
            .into_iter()
            .map(|(job, started_at, ended_at, outcome, detail, reason, at)| ReplayAttempt {
                job: ReplayJobId::from_uuid(job),
                started_at,
                ended_at,
                outcome,
                detail,
                failure_before: reason.zip(at).map(|(reason, at)| Failure { reason, at }),
            })
            .collect())
    }
}

-- The admin API's second pass (issue 27): offboarding a tenant, keys managed over HTTP, and
-- replays as jobs. Expand only: new tables, nullable columns, grants and policies; the previous
-- release reads none of them.

-- Offboarding. doorman_admin deletes a tenant (its workspaces, installation, agent, install
-- links and states, idempotency records and scoped keys go with it by their foreign keys), an
-- agent on its own, and the tenant's receipts, kept payloads and request fingerprints, which
-- have no foreign key (they are distributed by tenant on Citus): those are deleted by the
-- tenant's id, in batches, each transaction acting for the tenant under row-level security.
GRANT DELETE ON tenants, agent_bridges, messaging_event_receipts TO doorman_admin;
GRANT SELECT, DELETE ON messaging_request_replays TO doorman_admin;

-- A deleted tenant is remembered, so that what it left in the receipt tables (a batch not yet
-- deleted when the process stopped, or a claim a serving process wrote in the milliseconds
-- before the deletion's notice reached it) is found and deleted again by `receipts prune`.
CREATE TABLE deleted_tenants (
    tenant_id   uuid        PRIMARY KEY,
    name        text        NOT NULL,
    deleted_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE deleted_tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON deleted_tenants
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT ON deleted_tenants TO doorman_admin;

-- Keys managed over HTTP by a key that may do everything: an optional expiry, and when the key
-- was last used (written at most once a minute per key). Keys for every tenant, and their
-- revocations, are audited without a tenant: doorman_admin may write such entries (reading
-- them stays for transactions that say they act across tenants).
ALTER TABLE admin_keys ADD COLUMN expires_at timestamptz;
ALTER TABLE admin_keys ADD COLUMN last_used_at timestamptz;
COMMENT ON COLUMN admin_keys.expires_at IS 'From then on the key authenticates nothing (NULL: it does not expire).';
COMMENT ON COLUMN admin_keys.last_used_at IS 'When the key last authenticated a request, to the minute.';
GRANT INSERT ON admin_keys TO doorman_admin;
GRANT UPDATE (revoked_at, last_used_at) ON admin_keys TO doorman_admin;
CREATE POLICY admin_writes_entries_without_tenant ON admin_audit FOR INSERT TO doorman_admin
    WITH CHECK (tenant_id IS NULL);

-- Replays as jobs: what was asked, by whom, and each selected event's outcome as it comes.
-- A job is queued (not started), running (a process holds it until runner_until, renewed
-- while it works) or finished. Its events are chosen when it is made, in claim order.
CREATE TABLE admin_replay_jobs (
    id            uuid        PRIMARY KEY,
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    selection     text        NOT NULL,
    actor_kind    text        NOT NULL CHECK (actor_kind IN ('key', 'cli')),
    actor_id      text        NOT NULL,
    actor_name    text        NOT NULL,
    request_id    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    runner_until  timestamptz
);
CREATE INDEX admin_replay_jobs_unfinished ON admin_replay_jobs (created_at, id) WHERE finished_at IS NULL;
CREATE INDEX admin_replay_jobs_tenant_newest ON admin_replay_jobs (tenant_id, created_at DESC, id DESC);

-- One row per selected event. `failure_before`/`failed_before_at`: the receipt's last failure
-- when the replay took it (what the dispatch before this one ended in).
CREATE TABLE admin_replay_job_events (
    job_id             uuid        NOT NULL REFERENCES admin_replay_jobs (id) ON DELETE CASCADE,
    position           integer     NOT NULL CHECK (position >= 0),
    tenant_id          uuid        NOT NULL,
    platform           text        NOT NULL,
    external_event_id  text        NOT NULL,
    started_at         timestamptz,
    ended_at           timestamptz,
    outcome            text,
    detail             text,
    failure_before     text,
    failed_before_at   timestamptz,
    PRIMARY KEY (job_id, position),
    CONSTRAINT outcome_when_ended CHECK ((outcome IS NULL) = (ended_at IS NULL))
);
CREATE INDEX admin_replay_job_events_by_event
    ON admin_replay_job_events (tenant_id, platform, external_event_id, started_at);

ALTER TABLE admin_replay_jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE admin_replay_job_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON admin_replay_jobs
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY tenant_isolation ON admin_replay_job_events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- A process looking for a job to run reads across tenants (a transaction that says so); it
-- then takes the job acting for its tenant.
CREATE POLICY admin_lists_every_tenant ON admin_replay_jobs FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');
GRANT SELECT, INSERT, UPDATE ON admin_replay_jobs, admin_replay_job_events TO doorman_admin;

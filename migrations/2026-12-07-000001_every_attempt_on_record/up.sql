-- Every attempt on record (issue 41, ADR 25). A first dispatch that the agent takes rides on its
-- receipt's completion: the statement that sets handled_at also keeps when the dispatch started
-- and the agent's status (no statement more on the hot path). Every other dispatch of a numbered
-- event, a failed one or an operator's replay, is a row of messaging_event_attempts, written by
-- the same outcome write, in the receipts' tenant scope (row-level security, its policy in
-- postgres/sql/policies/messaging_event_attempts.sql) and, on Citus, distributed by tenant and
-- co-located with the receipts (postgres/citus.sql). Retention follows the receipts': the prune
-- that deletes a tenant's expired receipts deletes its attempts started before the same cutoff.
--
-- Expand only: new columns (null for receipts completed before), a new table, and new
-- signatures of doorman_write_outcomes and doorman_record_outcomes beside the ones the previous
-- release calls (which now forward to them). The new signatures are created here as stubs, so
-- that their grants can be given here; their bodies are their files'.
ALTER TABLE messaging_event_receipts
    ADD COLUMN dispatched_at timestamptz,
    ADD COLUMN answer_status smallint;

CREATE TABLE messaging_event_attempts (
    tenant_id         uuid        NOT NULL,
    platform          text        NOT NULL,
    external_event_id text        NOT NULL,
    started_at        timestamptz NOT NULL,
    ended_at          timestamptz NOT NULL,
    -- An operator's replay, not Doorman's own dispatch.
    replay            boolean     NOT NULL DEFAULT false,
    -- The agent's HTTP status, when it answered.
    status            smallint,
    -- Why it did not end in a 2xx (doorman_domain::FailureKind's words); null for a replay
    -- that succeeded.
    failure           text,
    reason            text,
    -- The first KiB of the agent's answer body, as text.
    answer            text,
    CONSTRAINT messaging_event_attempts_pkey PRIMARY KEY (tenant_id, platform, external_event_id, started_at),
    CONSTRAINT messaging_event_attempts_answer_size CHECK (octet_length(answer) <= 4096)
);
-- "Attempts of tenant T started before the cutoff": the prune in each completion.
CREATE INDEX messaging_event_attempts_expiry ON messaging_event_attempts (tenant_id, started_at);
ALTER TABLE messaging_event_attempts ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, DELETE ON messaging_event_attempts TO doorman_app, doorman_admin;
-- UPDATE only for the prune's row locks (FOR UPDATE SKIP LOCKED: two processes pruning a
-- tenant at once skip each other's rows instead of waiting): no statement updates an attempt.
GRANT UPDATE ON messaging_event_attempts TO doorman_app;

CREATE FUNCTION doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_started_at timestamptz[], p_statuses smallint[], p_failures text[], p_answers text[], p_replays boolean[]
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_write_outcomes.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[])
    TO doorman_app, doorman_admin;

CREATE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_started_at timestamptz[], p_statuses smallint[], p_failures text[], p_answers text[], p_replays boolean[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE(outcome_tenant uuid, pruned bigint) LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_record_outcomes.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[], uuid[], timestamptz, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[], uuid[], timestamptz, bigint)
    TO doorman_app;

-- The outcomes of a batch: handled_at or the failure, never over an earlier handled_at; a
-- completed event's kept payload released, a failed one's lease dropped. A first dispatch that
-- succeeded keeps its start and the agent's status on the receipt; every failed dispatch and
-- every replay is an attempt of its own (messaging_event_attempts; the same attempt written
-- again is one, by its start).
-- Its history: migrations/ up to 2026-12-07-000001_every_attempt_on_record.
CREATE OR REPLACE FUNCTION public.doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_started_at timestamptz[], p_statuses smallint[], p_failures text[], p_answers text[], p_replays boolean[]
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
BEGIN
    WITH recorded AS (
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = coalesce(r.handled_at, u.handled_at),
               dispatched_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NOT NULL AND NOT coalesce(u.replay, false)
                                    THEN u.started_at ELSE r.dispatched_at END,
               answer_status = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NOT NULL AND NOT coalesce(u.replay, false)
                                    THEN u.status ELSE r.answer_status END,
               failure_reason = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at,
                      p_started_at, p_statuses, p_replays)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at, started_at, status, replay)
         WHERE r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
        RETURNING r.tenant_id, r.platform, r.external_event_id, u.handled_at IS NOT NULL AS completed
    ), released AS (
        DELETE FROM public.messaging_event_payloads AS p
         USING recorded AS d
         WHERE d.completed
           AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id
    )
    UPDATE public.messaging_event_payloads AS p
       SET leased_until = NULL
      FROM recorded AS d
     WHERE NOT d.completed AND p.leased_until IS NOT NULL
       AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id;
    -- A batch of first deliveries only (the hot path without failures) writes no attempt row,
    -- and runs no statement for them: a data-modifying CTE would run even with nothing to
    -- insert.
    IF array_position(p_handled_at, NULL) IS NOT NULL OR true = ANY (p_replays) THEN
        INSERT INTO public.messaging_event_attempts AS a
            (tenant_id, platform, external_event_id, started_at, ended_at, replay, status, failure, reason, answer)
        SELECT u.tenant, u.platform, u.event_id, coalesce(u.started_at, u.failed_at, u.handled_at),
               coalesce(u.failed_at, u.handled_at), coalesce(u.replay, false), u.status, u.failure, u.reason, u.answer
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at,
                      p_started_at, p_statuses, p_failures, p_answers, p_replays)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at, started_at, status, failure, answer, replay)
         WHERE (u.handled_at IS NULL OR coalesce(u.replay, false))
           AND EXISTS (SELECT FROM public.messaging_event_receipts AS r
                        WHERE r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id)
        ON CONFLICT ON CONSTRAINT messaging_event_attempts_pkey DO NOTHING;
    END IF;
END
$$;

-- The previous release's form (its admin processes write a replay's outcome with it): the same,
-- with nothing known of the attempt but its end and reason. Contract: drop it (a migration) once
-- deploy/previous-release includes 2026-12-07-000001.
CREATE OR REPLACE FUNCTION public.doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[]
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM public.doorman_write_outcomes(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons,
        p_failed_at, NULL::timestamptz[], NULL::smallint[], NULL::text[], NULL::text[], NULL::boolean[]);
END
$$;

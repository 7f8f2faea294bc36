-- Why Citus has its own form (ADR 22, ADR 23): on one PostgreSQL the set-based form beside this
-- file is the fastest, but on Citus an `INSERT … SELECT FROM unnest(…)` is not routed (its rows
-- are collected on the coordinator and pushed to every shard they touch as intermediate
-- results), and an `UPDATE … FROM unnest(…)` whose rows feed further statements is planned the
-- same way. A single-row statement naming its tenant is routed to that tenant's shard as it
-- is: measured with 16 tenants per call, the claim went from ~200 to ~2,000 events/s and claim
-- plus outcomes from ~150 to ~700. Same arguments, same answer and same locking order (by
-- tenant, then event) as the plain form.
CREATE OR REPLACE FUNCTION public.doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_started_at timestamptz[], p_statuses smallint[], p_failures text[], p_answers text[], p_replays boolean[]
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_row record;
    v_first boolean;
BEGIN
    FOR v_row IN
        SELECT u.tenant, u.platform, u.event_id, u.handled_at, u.reason, u.failed_at, u.started_at, u.status,
               u.failure, u.answer, coalesce(u.replay, false) AS replay
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at,
                      p_started_at, p_statuses, p_failures, p_answers, p_replays)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at, started_at, status, failure, answer, replay)
         ORDER BY u.tenant, u.platform, u.event_id
    LOOP
        v_first := v_row.handled_at IS NOT NULL AND NOT v_row.replay;
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = coalesce(r.handled_at, v_row.handled_at),
               dispatched_at = CASE WHEN r.handled_at IS NULL AND v_first THEN v_row.started_at ELSE r.dispatched_at END,
               answer_status = CASE WHEN r.handled_at IS NULL AND v_first THEN v_row.status ELSE r.answer_status END,
               failure_reason = CASE WHEN r.handled_at IS NULL AND v_row.handled_at IS NULL THEN v_row.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND v_row.handled_at IS NULL THEN v_row.failed_at ELSE r.failed_at END
         WHERE r.tenant_id = v_row.tenant AND r.platform = v_row.platform AND r.external_event_id = v_row.event_id;
        CONTINUE WHEN NOT FOUND;
        -- A failed dispatch and a replay are attempts of their own.
        IF v_row.handled_at IS NULL OR v_row.replay THEN
            INSERT INTO public.messaging_event_attempts AS a
                (tenant_id, platform, external_event_id, started_at, ended_at, replay, status, failure, reason, answer)
            VALUES (v_row.tenant, v_row.platform, v_row.event_id,
                    coalesce(v_row.started_at, v_row.failed_at, v_row.handled_at),
                    coalesce(v_row.failed_at, v_row.handled_at),
                    v_row.replay, v_row.status, v_row.failure, v_row.reason, v_row.answer)
            ON CONFLICT ON CONSTRAINT messaging_event_attempts_pkey DO NOTHING;
        END IF;
        -- A completed event's kept payload is released; a failed one's lease is dropped, so
        -- a replay may take it again.
        IF v_row.handled_at IS NOT NULL THEN
            DELETE FROM public.messaging_event_payloads AS p
             WHERE p.tenant_id = v_row.tenant AND p.platform = v_row.platform AND p.external_event_id = v_row.event_id;
        ELSE
            UPDATE public.messaging_event_payloads AS p
               SET leased_until = NULL
             WHERE p.tenant_id = v_row.tenant AND p.platform = v_row.platform AND p.external_event_id = v_row.event_id
               AND p.leased_until IS NOT NULL;
        END IF;
    END LOOP;
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

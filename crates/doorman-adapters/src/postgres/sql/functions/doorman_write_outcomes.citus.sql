-- Why Citus has its own form (ADR 22, ADR 23): on one PostgreSQL the set-based form beside this
-- file is the fastest, but on Citus an `INSERT … SELECT FROM unnest(…)` is not routed (its rows
-- are collected on the coordinator and pushed to every shard they touch as intermediate
-- results), and an `UPDATE … FROM unnest(…)` whose rows feed further statements is planned the
-- same way. A single-row statement naming its tenant is routed to that tenant's shard as it
-- is: measured with 16 tenants per call, the claim went from ~200 to ~2,000 events/s and claim
-- plus outcomes from ~150 to ~700. Same arguments, same answer and same locking order (by
-- tenant, then event) as the plain form.
CREATE OR REPLACE FUNCTION public.doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_handled_at timestamptz[],
    p_failure_reasons text[], p_failed_at timestamptz[]
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_row record;
BEGIN
    FOR v_row IN
        SELECT u.* FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
         ORDER BY u.tenant, u.platform, u.event_id
    LOOP
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = coalesce(r.handled_at, v_row.handled_at),
               failure_reason = CASE WHEN r.handled_at IS NULL AND v_row.handled_at IS NULL THEN v_row.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND v_row.handled_at IS NULL THEN v_row.failed_at ELSE r.failed_at END
         WHERE r.tenant_id = v_row.tenant AND r.platform = v_row.platform AND r.external_event_id = v_row.event_id;
        CONTINUE WHEN NOT FOUND;
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

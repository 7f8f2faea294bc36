-- Each role calls only what its process calls, and a replay's outcome is checked against the
-- tenant it is for (issue 25).
--
-- The outcomes' rule (a completion sets handled_at once, a failure never touches a handled
-- receipt, a handled event's kept payload goes) is now doorman_write_outcomes, which names no
-- tenant itself: it writes under whatever tenants its caller named, so row-level security
-- checks its rows against them. The server's batch function names the batch's tenants
-- (app.tenant_ids) and calls it; a replay (the admin process, or the command line) names its
-- one tenant (app.tenant_id) and calls it, so a replay cannot write another tenant's receipt.
-- doorman_admin no longer executes doorman_record_outcomes (which names the tenants of its own
-- input): a previous admin binary's replays, during a deploy, dispatch but cannot record their
-- outcome (the receipt keeps its earlier state, visibly). The server no longer executes the
-- sweep: its gauges run it inside doorman_receipt_counts.
CREATE FUNCTION doorman_write_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[]
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
               failure_reason = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
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
END
$$;
REVOKE ALL ON FUNCTION doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[])
    TO doorman_app, doorman_admin;

CREATE OR REPLACE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_callers text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    PERFORM public.doorman_write_outcomes(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at);
    v_ignored := set_config('app.tenant_ids', coalesce(v_callers, ''), true);
    IF cardinality(p_prune_tenants) > 0 THEN
        FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_prune_tenants) AS t ORDER BY t LOOP
            v_ignored := set_config('app.tenant_id', v_tenant::text, true);
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END LOOP;
        v_ignored := set_config('app.tenant_id', coalesce(v_caller, ''), true);
    END IF;
END
$$;

REVOKE EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) FROM doorman_admin;
REVOKE EXECUTE ON FUNCTION doorman_sweep_receipts(timestamptz) FROM doorman_app;

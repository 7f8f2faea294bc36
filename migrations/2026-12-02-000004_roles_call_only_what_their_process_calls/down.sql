-- doorman_admin records replays' outcomes through the batch function again.
REVOKE EXECUTE ON FUNCTION doorman_sweep_receipts(timestamptz) FROM doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_sweep_receipts(timestamptz) TO doorman_app, doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) TO doorman_admin;
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

DROP FUNCTION doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[]);

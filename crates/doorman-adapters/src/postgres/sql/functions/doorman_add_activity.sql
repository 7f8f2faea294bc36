-- A serving process's counts of its dispatches by tenant and hour, added to what other
-- processes and earlier flushes counted (one statement a flush), and the hours older than
-- p_keep_after (the longest chart's reach, with a margin) dropped for those tenants. Tenants are
-- named for the statement in app.tenant_ids (row-level security), as the hot path's batches do.
-- Its history: migrations/2026-12-10-000001_activity_by_hour.
CREATE OR REPLACE FUNCTION public.doorman_add_activity(
    p_tenants uuid[], p_hours timestamptz[], p_delivered bigint[], p_failed bigint[],
    p_dispatch_ms bigint[], p_dispatch_ms_max integer[], p_keep_after timestamptz
) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    -- In the primary key's order, so two processes' flushes never deadlock.
    INSERT INTO public.messaging_activity_hours AS a
        (tenant_id, hour, delivered, failed, dispatch_ms, dispatch_ms_max)
    SELECT u.tenant, u.hour, u.delivered, u.failed, u.dispatch_ms, u.dispatch_ms_max
      FROM unnest(p_tenants, p_hours, p_delivered, p_failed, p_dispatch_ms, p_dispatch_ms_max)
           AS u(tenant, hour, delivered, failed, dispatch_ms, dispatch_ms_max)
     ORDER BY u.tenant, u.hour
    ON CONFLICT ON CONSTRAINT messaging_activity_hours_pkey DO UPDATE
       SET delivered = a.delivered + EXCLUDED.delivered,
           failed = a.failed + EXCLUDED.failed,
           dispatch_ms = a.dispatch_ms + EXCLUDED.dispatch_ms,
           dispatch_ms_max = greatest(a.dispatch_ms_max, EXCLUDED.dispatch_ms_max);
    DELETE FROM public.messaging_activity_hours AS a
     WHERE a.tenant_id = ANY (p_tenants) AND a.hour < p_keep_after;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$$;

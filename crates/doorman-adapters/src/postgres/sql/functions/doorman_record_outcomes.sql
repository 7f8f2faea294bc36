-- The hot path's outcomes: each event's handled_at or failure written in one batch (with the
-- attempt: doorman_write_outcomes), and the bounded prune of the tenants named in
-- p_prune_tenants; one row per tenant pruned.
-- Its history: migrations/ up to 2026-12-07-000001_every_attempt_on_record.
CREATE OR REPLACE FUNCTION public.doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_started_at timestamptz[], p_statuses smallint[], p_failures text[], p_answers text[], p_replays boolean[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE(outcome_tenant uuid, pruned bigint)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_callers text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    PERFORM public.doorman_write_outcomes(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at,
        p_started_at, p_statuses, p_failures, p_answers, p_replays);
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_callers, ''));
    IF cardinality(p_prune_tenants) > 0 THEN
        FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_prune_tenants) AS t ORDER BY t LOOP
            v_ignored := public.doorman_set_local('app.tenant_id', v_tenant::text);
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END LOOP;
        v_ignored := public.doorman_set_local('app.tenant_id', coalesce(v_caller, ''));
    END IF;
END
$function$
;

-- The previous release's form (its servers, and its admin processes' replays, call it, as
-- doorman_app or doorman_admin, which may call doorman_write_outcomes's forms but not this
-- function's new one): its body as it was, writing through doorman_write_outcomes's previous form,
-- which forwards to the new one with nothing known of the attempts but their ends and reasons.
-- Contract: drop it (a migration) once deploy/previous-release includes 2026-12-07-000001.
CREATE OR REPLACE FUNCTION public.doorman_record_outcomes(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_handled_at timestamp with time zone[], p_failure_reasons text[], p_failed_at timestamp with time zone[], p_prune_tenants uuid[], p_expired_before timestamp with time zone, p_prune_batch bigint)
 RETURNS TABLE(outcome_tenant uuid, pruned bigint)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_callers text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    PERFORM public.doorman_write_outcomes(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at);
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_callers, ''));
    IF cardinality(p_prune_tenants) > 0 THEN
        FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_prune_tenants) AS t ORDER BY t LOOP
            v_ignored := public.doorman_set_local('app.tenant_id', v_tenant::text);
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END LOOP;
        v_ignored := public.doorman_set_local('app.tenant_id', coalesce(v_caller, ''));
    END IF;
END
$function$
;

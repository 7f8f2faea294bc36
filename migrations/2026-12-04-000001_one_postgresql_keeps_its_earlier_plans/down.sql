-- Back to what 2026-12-03-000002 left: doorman_set_local as SET LOCAL, the policies' tenant
-- list cast per row, the batches with tenant_id = ANY (p_tenants) and custom plans.

CREATE OR REPLACE FUNCTION doorman_set_local(p_name text, p_value text) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
BEGIN
    IF p_name NOT IN ('app.tenant_id', 'app.tenant_ids', 'app.all_tenants') THEN
        RAISE EXCEPTION 'doorman_set_local sets only Doorman''s own settings, not %', p_name;
    END IF;
    EXECUTE format('SET LOCAL %s = %L', p_name, coalesce(p_value, ''));
    RETURN p_value;
END
$function$;

ALTER POLICY tenant_isolation ON messaging_event_receipts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]));
ALTER POLICY tenant_isolation ON messaging_event_payloads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]));
ALTER POLICY tenant_isolation ON messaging_request_replays
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]));

CREATE OR REPLACE FUNCTION public.doorman_write_outcomes(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_handled_at timestamp with time zone[], p_failure_reasons text[], p_failed_at timestamp with time zone[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
BEGIN
    WITH recorded AS (
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = coalesce(r.handled_at, u.handled_at),
               failure_reason = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
         WHERE r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
           AND r.tenant_id = ANY (p_tenants)
        RETURNING r.tenant_id, r.platform, r.external_event_id, u.handled_at IS NOT NULL AS completed
    ), released AS (
        DELETE FROM public.messaging_event_payloads AS p
         USING recorded AS d
         WHERE d.completed
           AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id
           AND p.tenant_id = ANY (p_tenants)
    )
    UPDATE public.messaging_event_payloads AS p
       SET leased_until = NULL
      FROM recorded AS d
     WHERE NOT d.completed AND p.leased_until IS NOT NULL
       AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id
       AND p.tenant_id = ANY (p_tenants);
END
$function$;

CREATE OR REPLACE FUNCTION public.doorman_claim_requests(p_tenants uuid[], p_signatures text[], p_expires_at timestamp with time zone[])
 RETURNS TABLE(claimed_tenant uuid, claimed_signature text)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    DELETE FROM public.messaging_request_replays AS r
     USING unnest(p_tenants, p_signatures) AS u(tenant, signature)
     WHERE r.tenant_id = u.tenant AND r.signature = u.signature AND r.expires_at < now()
       AND r.tenant_id = ANY (p_tenants);
    RETURN QUERY
        WITH inserted AS (
            INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at)
            SELECT u.tenant, u.signature, u.expires_at
              FROM unnest(p_tenants, p_signatures, p_expires_at) AS u(tenant, signature, expires_at)
             ORDER BY u.tenant, u.signature
            ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING
            RETURNING r.tenant_id, r.signature
        )
        SELECT * FROM inserted;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$function$;

CREATE OR REPLACE FUNCTION public.doorman_settle_receipts(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[], p_event_types text[], p_attempts integer[], p_claimed_at timestamp with time zone[], p_payloads text[])
 RETURNS TABLE(held_by uuid)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM * FROM public.doorman_claim_receipts(
        p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at, p_payloads);
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    RETURN QUERY
        SELECT r.claim_id
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids) AS u(tenant, platform, event_id, claim_id)
          JOIN public.messaging_event_receipts AS r
            ON r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
         WHERE r.claim_id = u.claim_id
           AND r.tenant_id = ANY (p_tenants);
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$function$;

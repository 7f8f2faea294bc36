-- Back to set_config() and the policies' InitPlan.
ALTER POLICY tenant_isolation ON messaging_event_receipts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))));
ALTER POLICY tenant_isolation ON messaging_event_payloads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))));
ALTER POLICY tenant_isolation ON messaging_request_replays
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))));

CREATE OR REPLACE FUNCTION public.doorman_claim_receipts(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[], p_event_types text[], p_attempts integer[], p_claimed_at timestamp with time zone[], p_payloads text[])
 RETURNS TABLE(held_by uuid)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    -- A receipt claimed more than half a minute ago (a settle) may be behind the sweep's
    -- watermark: it is marked as the sweep would have. The watermark is read only then.
    IF cardinality(array_remove(p_payloads, NULL)) = 0 THEN
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at, swept_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at,
                       CASE WHEN u.claimed_at < now() - interval '30 seconds'
                             AND u.claimed_at <= (SELECT public.doorman_sweep_watermark()) THEN now() END
                  FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                       AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                 ORDER BY u.tenant, u.platform, u.event_id
                ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                RETURNING r.claim_id
            )
            SELECT * FROM inserted;
    ELSE
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at, swept_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at,
                       CASE WHEN u.claimed_at < now() - interval '30 seconds'
                             AND u.claimed_at <= (SELECT public.doorman_sweep_watermark()) THEN now() END
                  FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                       AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                 ORDER BY u.tenant, u.platform, u.event_id
                ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                RETURNING r.tenant_id, r.platform, r.external_event_id, r.claimed_at, r.claim_id
            ), kept AS (
                INSERT INTO public.messaging_event_payloads
                    (tenant_id, platform, external_event_id, claimed_at, payload)
                SELECT i.tenant_id, i.platform, i.external_event_id, i.claimed_at, u.payload
                  FROM inserted AS i
                  JOIN unnest(p_tenants, p_platforms, p_event_ids, p_payloads)
                       AS u(tenant, platform, event_id, payload)
                    ON u.tenant = i.tenant_id AND u.platform = i.platform AND u.event_id = i.external_event_id
                 WHERE u.payload IS NOT NULL
            )
            SELECT i.claim_id FROM inserted AS i;
    END IF;
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$function$
;

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
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    DELETE FROM public.messaging_request_replays AS r
     USING unnest(p_tenants, p_signatures) AS u(tenant, signature)
     WHERE r.tenant_id = u.tenant AND r.signature = u.signature AND r.expires_at < now();
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
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$function$
;

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
$function$
;

CREATE OR REPLACE FUNCTION public.doorman_settle_receipts(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[], p_event_types text[], p_attempts integer[], p_claimed_at timestamp with time zone[], p_payloads text[])
 RETURNS TABLE(held_by uuid)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM * FROM public.doorman_claim_receipts(
        p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at, p_payloads);
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    RETURN QUERY
        SELECT r.claim_id
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids) AS u(tenant, platform, event_id, claim_id)
          JOIN public.messaging_event_receipts AS r
            ON r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
         WHERE r.claim_id = u.claim_id;
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$function$
;

DROP FUNCTION doorman_set_local(text, text);

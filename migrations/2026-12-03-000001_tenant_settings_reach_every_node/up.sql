-- What a transaction says about its tenants reaches every node that reads or writes for it.
--
-- On one PostgreSQL the receipts' policies read `app.tenant_id` / `app.tenant_ids` in the
-- backend that runs the statement. On Citus (ADR 22) the receipts, kept payloads and request
-- fingerprints are distributed by tenant: their rows live in shards on the workers, read and
-- written by the workers' backends, and a setting made with set_config() stays in the
-- coordinator's backend, so a shard's policy would see no tenant and refuse every row (it fails
-- closed). A `SET LOCAL` is forwarded to the workers (with `citus.propagate_set_commands =
-- 'local'`, which `doorman migrate` sets for a Citus database). So the functions that touch
-- those tables name their tenants with doorman_set_local(), which runs `SET LOCAL`; on one
-- PostgreSQL the two are the same thing.
--
-- The policies lose their `ARRAY(SELECT unnest(…))`: Citus refuses a subquery in a distributed
-- table's policy. The list is now cast where it is compared (once per row checked; a batch is
-- tens of rows), measured in docs/benchmarks.md.
--
-- doorman_resolve keeps set_config(): it reads only the directory, which stays on the
-- coordinator (ADR 22).

CREATE FUNCTION doorman_set_local(p_name text, p_value text) RETURNS text
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
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
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
                -- Never met on one PostgreSQL (the receipt was just inserted, and a payload goes
                -- with its receipt); it makes Citus write the shards with INSERT, not COPY, which
                -- row-level security refuses. A payload left by a receipt pruned away is replaced.
                ON CONFLICT ON CONSTRAINT messaging_event_payloads_pkey DO UPDATE
                   SET claimed_at = EXCLUDED.claimed_at, payload = EXCLUDED.payload, leased_until = NULL
            )
            SELECT i.claim_id FROM inserted AS i;
    END IF;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
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
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
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
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
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
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    RETURN QUERY
        SELECT r.claim_id
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids) AS u(tenant, platform, event_id, claim_id)
          JOIN public.messaging_event_receipts AS r
            ON r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
         WHERE r.claim_id = u.claim_id;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$function$
;

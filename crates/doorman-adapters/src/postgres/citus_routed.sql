-- Doorman on a Citus coordinator (ADR 22): run by `doorman migrate` after citus.sql, in a
-- transaction of its own (Citus propagates a function's definition to the workers, which it
-- refuses in the transaction that distributed a table). Every statement is safe to run again.
--
-- What a Citus database runs in place of the migrations' definitions: the claims, the request
-- fingerprints and the outcomes as one routed statement per event, the settle's look-up pruned
-- to its tenants' shards, and tenants named with `SET LOCAL` (ADR 22, docs/benchmarks.md).
--
-- The migrations' set-based definitions are the fastest on one PostgreSQL, but on Citus an
-- `INSERT … SELECT FROM unnest(…)` is not routed (its rows are collected on the coordinator and
-- pushed to every shard they touch as intermediate results), and an `UPDATE … FROM unnest(…)`
-- whose rows feed further statements is planned the same way. A single-row statement naming
-- its tenant is routed to that tenant's shard as it is: measured with 16 tenants per call, the
-- claim went from ~200 to ~2,000 events/s and claim plus outcomes from ~150 to ~700.
--
-- Same arguments, same answer and same locking order (by tenant, then event) as the
-- migrations' definitions they replace here, and run after every `doorman migrate`, so a
-- migration that redefines one must change it here too (the Citus e2e tests run all three).
CREATE OR REPLACE FUNCTION public.doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[],
    p_event_types text[], p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (held_by uuid)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
    v_row record;
    v_swept timestamptz;
    v_claim uuid;
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    FOR v_row IN
        SELECT u.* FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at, p_payloads)
               AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at, payload)
         ORDER BY u.tenant, u.platform, u.event_id
    LOOP
        -- Evaluated here on the coordinator, where the watermark is (see the migrations'
        -- definition: a settle's receipt behind the sweep's watermark is marked as swept).
        v_swept := CASE WHEN v_row.claimed_at < now() - interval '30 seconds'
                         AND v_row.claimed_at <= public.doorman_sweep_watermark() THEN now() END;
        INSERT INTO public.messaging_event_receipts AS r
            (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at, swept_at)
        VALUES (v_row.tenant, v_row.platform, v_row.event_id, v_row.claim_id, v_row.event_type, v_row.attempt,
                v_row.claimed_at, v_swept)
        ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
        RETURNING r.claim_id INTO v_claim;
        CONTINUE WHEN NOT FOUND;
        held_by := v_claim;
        RETURN NEXT;
        IF v_row.payload IS NOT NULL THEN
            -- A payload left by a receipt pruned away is replaced (as in the migrations').
            INSERT INTO public.messaging_event_payloads AS p
                (tenant_id, platform, external_event_id, claimed_at, payload)
            VALUES (v_row.tenant, v_row.platform, v_row.event_id, v_row.claimed_at, v_row.payload)
            ON CONFLICT ON CONSTRAINT messaging_event_payloads_pkey DO UPDATE
               SET claimed_at = EXCLUDED.claimed_at, payload = EXCLUDED.payload, leased_until = NULL;
        END IF;
    END LOOP;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$$;

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

CREATE OR REPLACE FUNCTION public.doorman_claim_requests(
    p_tenants uuid[], p_signatures text[], p_expires_at timestamptz[]
) RETURNS TABLE (claimed_tenant uuid, claimed_signature text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
    v_row record;
    v_now timestamptz := now();
BEGIN
    PERFORM public.doorman_set_local('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text);
    FOR v_row IN
        SELECT u.* FROM unnest(p_tenants, p_signatures, p_expires_at) AS u(tenant, signature, expires_at)
         ORDER BY u.tenant, u.signature
    LOOP
        -- An expired fingerprint no longer refuses its request (as in the migrations').
        DELETE FROM public.messaging_request_replays AS r
         WHERE r.tenant_id = v_row.tenant AND r.signature = v_row.signature AND r.expires_at < v_now;
        INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at)
        VALUES (v_row.tenant, v_row.signature, v_row.expires_at)
        ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING
        RETURNING r.tenant_id, r.signature INTO claimed_tenant, claimed_signature;
        CONTINUE WHEN NOT FOUND;
        RETURN NEXT;
    END LOOP;
    v_ignored := public.doorman_set_local('app.tenant_ids', coalesce(v_caller, ''));
END
$$;

-- Tenants are named with `SET LOCAL`, which Citus forwards to the workers that run a
-- transaction's statements (with citus.propagate_set_commands = 'local', set by citus.sql), so
-- the shards' policies see them; set_config(), what one PostgreSQL uses, stays in the
-- coordinator's backend, and a shard's policy would see no tenant and refuse every row.
CREATE OR REPLACE FUNCTION public.doorman_set_local(p_name text, p_value text) RETURNS text
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

-- A settle's look-up of which claims hold their events names its tenants (tenant_id = ANY, with
-- custom plans) so that Citus sends it only to their shards, not to all of them.
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

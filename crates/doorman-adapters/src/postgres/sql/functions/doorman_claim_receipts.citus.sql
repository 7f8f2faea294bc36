-- Why Citus has its own form (ADR 22, ADR 23): on one PostgreSQL the set-based form beside this
-- file is the fastest, but on Citus an `INSERT … SELECT FROM unnest(…)` is not routed (its rows
-- are collected on the coordinator and pushed to every shard they touch as intermediate
-- results), and an `UPDATE … FROM unnest(…)` whose rows feed further statements is planned the
-- same way. A single-row statement naming its tenant is routed to that tenant's shard as it
-- is: measured with 16 tenants per call, the claim went from ~200 to ~2,000 events/s and claim
-- plus outcomes from ~150 to ~700. Same arguments, same answer and same locking order (by
-- tenant, then event) as the plain form.
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

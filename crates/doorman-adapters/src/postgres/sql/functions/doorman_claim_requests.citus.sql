-- Why Citus has its own form (ADR 22, ADR 23): on one PostgreSQL the set-based form beside this
-- file is the fastest, but on Citus an `INSERT … SELECT FROM unnest(…)` is not routed (its rows
-- are collected on the coordinator and pushed to every shard they touch as intermediate
-- results), and an `UPDATE … FROM unnest(…)` whose rows feed further statements is planned the
-- same way. A single-row statement naming its tenant is routed to that tenant's shard as it
-- is: measured with 16 tenants per call, the claim went from ~200 to ~2,000 events/s and claim
-- plus outcomes from ~150 to ~700. Same arguments, same answer and same locking order (by
-- tenant, then event) as the plain form.
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

-- The hot path's claim: one INSERT for the whole batch in the global order (tenant, platform,
-- event id) that keeps two batches from deadlocking; the claims that hold their events come back.
-- Payloads, when kept, are stored beside. Tenants are named for the statement in app.tenant_ids.
-- Its history: migrations/ up to 2026-12-03-000001_tenant_settings_reach_every_node.
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

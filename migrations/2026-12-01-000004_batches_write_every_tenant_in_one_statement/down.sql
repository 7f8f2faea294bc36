CREATE OR REPLACE FUNCTION doorman_claim_requests(p_tenants uuid[], p_signatures text[], p_expires_at timestamptz[])
RETURNS TABLE (claimed_tenant uuid, claimed_signature text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        DELETE FROM public.messaging_request_replays AS r
         USING unnest(p_tenants, p_signatures) AS u(tenant, signature)
         WHERE u.tenant = v_tenant AND r.tenant_id = u.tenant AND r.signature = u.signature
           AND r.expires_at < now();
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at)
                SELECT u.tenant, u.signature, u.expires_at
                  FROM unnest(p_tenants, p_signatures, p_expires_at) AS u(tenant, signature, expires_at)
                 WHERE u.tenant = v_tenant
                 ORDER BY u.signature
                ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING
                RETURNING r.tenant_id, r.signature
            )
            SELECT * FROM inserted;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = u.handled_at,
               failure_reason = CASE WHEN u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
         WHERE u.tenant = v_tenant
           AND r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
           AND r.handled_at IS NULL;
        IF EXISTS (SELECT FROM public.messaging_event_payloads AS p WHERE p.tenant_id = v_tenant) THEN
            DELETE FROM public.messaging_event_payloads AS p
             USING unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
             WHERE u.tenant = v_tenant AND u.handled_at IS NOT NULL
               AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
            UPDATE public.messaging_event_payloads AS p
               SET leased_until = NULL
              FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
             WHERE u.tenant = v_tenant AND u.handled_at IS NULL AND p.leased_until IS NOT NULL
               AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
        END IF;
        IF v_tenant = ANY (p_prune_tenants) THEN
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END IF;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_settle_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[],
    p_event_types text[], p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (held_by uuid)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    PERFORM * FROM public.doorman_claim_receipts(
        p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at, p_payloads);
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        RETURN QUERY
            SELECT r.claim_id
              FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids)
                   AS u(tenant, platform, event_id, claim_id)
              JOIN public.messaging_event_receipts AS r
                ON r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
             WHERE u.tenant = v_tenant AND r.claim_id = u.claim_id;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[],
    p_event_types text[], p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (held_by uuid)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_keeps boolean := EXISTS (SELECT FROM unnest(p_payloads) AS p WHERE p IS NOT NULL);
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        IF NOT v_keeps THEN
            RETURN QUERY
                WITH inserted AS (
                    INSERT INTO public.messaging_event_receipts AS r
                        (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at)
                    SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at
                      FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                           AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                     WHERE u.tenant = v_tenant
                     ORDER BY u.platform, u.event_id
                    ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                    RETURNING r.claim_id
                )
                SELECT * FROM inserted;
        ELSE
            RETURN QUERY
                WITH inserted AS (
                    INSERT INTO public.messaging_event_receipts AS r
                        (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at)
                    SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at
                      FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                           AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                     WHERE u.tenant = v_tenant
                     ORDER BY u.platform, u.event_id
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
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

ALTER POLICY tenant_isolation ON messaging_request_replays
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER POLICY tenant_isolation ON messaging_event_payloads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER POLICY tenant_isolation ON messaging_event_receipts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

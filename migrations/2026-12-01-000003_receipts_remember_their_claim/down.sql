DROP FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]);
DROP FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]);
CREATE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_event_types text[],
    p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (claimed_tenant uuid, claimed_platform text, claimed_event_id text)
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
                        (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at)
                    SELECT u.tenant, u.platform, u.event_id, u.event_type, u.attempt, u.claimed_at
                      FROM unnest(p_tenants, p_platforms, p_event_ids, p_event_types, p_attempts, p_claimed_at)
                           AS u(tenant, platform, event_id, event_type, attempt, claimed_at)
                     WHERE u.tenant = v_tenant
                     ORDER BY u.platform, u.event_id
                    ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                    RETURNING r.tenant_id, r.platform, r.external_event_id
                )
                SELECT * FROM inserted;
        ELSE
            RETURN QUERY
                WITH inserted AS (
                    INSERT INTO public.messaging_event_receipts AS r
                        (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at)
                    SELECT u.tenant, u.platform, u.event_id, u.event_type, u.attempt, u.claimed_at
                      FROM unnest(p_tenants, p_platforms, p_event_ids, p_event_types, p_attempts, p_claimed_at)
                           AS u(tenant, platform, event_id, event_type, attempt, claimed_at)
                     WHERE u.tenant = v_tenant
                     ORDER BY u.platform, u.event_id
                    ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                    RETURNING r.tenant_id, r.platform, r.external_event_id, r.claimed_at
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
                SELECT i.tenant_id, i.platform, i.external_event_id FROM inserted AS i;
        END IF;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;
REVOKE ALL ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]) TO doorman_app;

ALTER TABLE messaging_event_receipts DROP COLUMN claim_id;

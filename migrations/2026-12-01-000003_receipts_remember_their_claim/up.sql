-- Each receipt remembers the claim that made it: one id per delivery, written with the claim.
-- A claim whose commit was never confirmed (the primary lost mid-commit, a connection cut
-- during COMMIT) is then sent again with the same id: finding its own id, the delivery knows
-- the claim is its own and dispatches; finding another's, it knows the event is taken.
-- Receipts claimed before this migration have none, and read as another delivery's.
ALTER TABLE messaging_event_receipts ADD COLUMN claim_id uuid;

DROP FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]);
-- Answers the claims it made (by their ids), not their keys: two deliveries of one event in
-- one batch are told apart by their claims.
CREATE FUNCTION doorman_claim_receipts(
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
REVOKE ALL ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) TO doorman_app;

-- Settles claims whose commit was not confirmed: claims what nothing holds yet (waiting for
-- any claim of the same key still committing), then, in a statement of its own and so with a
-- snapshot taken after that wait, answers which of these claims hold their key. Rare (only after
-- a lost commit), so the claim itself stays one INSERT.
CREATE FUNCTION doorman_settle_receipts(
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
REVOKE ALL ON FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) TO doorman_app;

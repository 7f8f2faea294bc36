DROP FUNCTION doorman_secret_key_ids();
DROP FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]);

-- The functions as migrations 000003 to 000005 left them.
CREATE OR REPLACE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tenant uuid := public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id);
BEGIN
    IF v_tenant IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('app.tenant_id', v_tenant::text, true);
    RETURN QUERY
        SELECT v_tenant, b.url, b.signing_secret, b.paused
          FROM (SELECT 1) AS one
          LEFT JOIN public.agent_bridges AS b ON b.tenant_id = v_tenant;
END
$$;

CREATE OR REPLACE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_event_types text[],
    p_attempts integer[], p_claimed_at timestamptz[]
) RETURNS TABLE (claimed_tenant uuid, claimed_platform text, claimed_event_id text)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tenant uuid;
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
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
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tenant uuid;
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
        IF v_tenant = ANY (p_prune_tenants) THEN
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION doorman_prune_expired_receipts(p_tenant uuid, p_expired_before timestamptz, p_limit bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_pruned bigint;
BEGIN
    -- Almost always nothing has expired: a one-page index probe says so, and the DELETE
    -- below (costlier to plan and run) is skipped.
    IF NOT EXISTS (SELECT FROM public.messaging_event_receipts AS e
                    WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before) THEN
        RETURN 0;
    END IF;
    DELETE FROM public.messaging_event_receipts AS r
     WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
        SELECT e.tenant_id, e.platform, e.external_event_id
          FROM public.messaging_event_receipts AS e
         WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_pruned = ROW_COUNT;
    RETURN v_pruned;
END
$$;

CREATE FUNCTION doorman_claim_receipt(
    p_tenant uuid, p_platform text, p_event_id text, p_event_type text, p_attempt integer, p_claimed_at timestamptz
) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_claimed boolean;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    INSERT INTO public.messaging_event_receipts
        (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at)
    VALUES (p_tenant, p_platform, p_event_id, p_event_type, p_attempt, p_claimed_at)
    ON CONFLICT (tenant_id, platform, external_event_id) DO NOTHING
    RETURNING true INTO v_claimed;
    -- No row back: the key was already taken (Duplicate).
    RETURN coalesce(v_claimed, false);
END
$$;

CREATE FUNCTION doorman_complete_receipt(
    p_tenant uuid, p_platform text, p_event_id text, p_handled_at timestamptz,
    p_expired_before timestamptz, p_prune_batch bigint
) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    UPDATE public.messaging_event_receipts AS r
       SET handled_at = p_handled_at
     WHERE r.tenant_id = p_tenant AND r.platform = p_platform AND r.external_event_id = p_event_id
       AND r.handled_at IS NULL;
    RETURN public.doorman_prune_expired_receipts(p_tenant, p_expired_before, p_prune_batch);
END
$$;

CREATE FUNCTION doorman_record_failure(
    p_tenant uuid, p_platform text, p_event_id text, p_reason text, p_failed_at timestamptz
) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    UPDATE public.messaging_event_receipts AS r
       SET failure_reason = p_reason, failed_at = p_failed_at
     WHERE r.tenant_id = p_tenant AND r.platform = p_platform AND r.external_event_id = p_event_id
       AND r.handled_at IS NULL;
END
$$;

REVOKE ALL ON FUNCTION doorman_claim_receipt(uuid, text, text, text, integer, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_record_failure(uuid, text, text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipt(uuid, text, text, text, integer, timestamptz) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_record_failure(uuid, text, text, text, timestamptz) TO doorman_app;

DROP TABLE messaging_request_replays;

GRANT INSERT, UPDATE, DELETE ON tenants, messaging_workspaces, agent_bridges TO doorman_app;

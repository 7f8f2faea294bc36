-- The server's hot paths as functions: one statement, one round trip each.
--
-- Each is SECURITY INVOKER (the default): it runs as doorman_app, so row-level security
-- applies exactly as before. Each first names its tenant with set_config(..., true), which
-- is local to the statement's own (implicit) transaction and so ends when it returns; in
-- autocommit a write is committed when the call returns (decision 2). Replacing
-- BEGIN / set_config / statement(s) / COMMIT by one call took the acknowledgement path
-- from 9 round trips to 2 (docs/benchmarks.md has the before and after).

-- Workspace -> tenant and its agent bridge. The lookup is the SECURITY DEFINER function;
-- the bridge is then read under the tenant's own policy.
CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
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

-- The claim: true when this call inserted the receipt (Claimed), false on conflict (Duplicate).
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

-- Completion: handled_at (once) and a bounded prune of the same tenant's expired receipts,
-- in one transaction. Returns how many were pruned.
CREATE FUNCTION doorman_complete_receipt(
    p_tenant uuid, p_platform text, p_event_id text, p_handled_at timestamptz,
    p_expired_before timestamptz, p_prune_batch bigint
) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_pruned bigint;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    UPDATE public.messaging_event_receipts AS r
       SET handled_at = p_handled_at
     WHERE r.tenant_id = p_tenant AND r.platform = p_platform AND r.external_event_id = p_event_id
       AND r.handled_at IS NULL;
    DELETE FROM public.messaging_event_receipts AS r
     WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
        SELECT e.tenant_id, e.platform, e.external_event_id
          FROM public.messaging_event_receipts AS e
         WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
         LIMIT p_prune_batch);
    GET DIAGNOSTICS v_pruned = ROW_COUNT;
    RETURN v_pruned;
END
$$;

-- A failed dispatch: the reason and when; handled_at stays null.
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

REVOKE ALL ON FUNCTION doorman_resolve(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_claim_receipt(uuid, text, text, text, integer, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_record_failure(uuid, text, text, text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_claim_receipt(uuid, text, text, text, integer, timestamptz) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_record_failure(uuid, text, text, text, timestamptz) TO doorman_app;

-- One bounded prune of one tenant's expired receipts, written once and used twice: by the
-- completion of a dispatch (as doorman_app, for the tenant it names, under row-level
-- security) and by `doorman receipts prune` (as the owner, tenant by tenant). It does not
-- set app.tenant_id itself: under row-level security it deletes only what the caller's
-- tenant may see. Rows another transaction is pruning (or touching) are skipped, not waited
-- for, so two completions of one tenant never wait on or deadlock with each other.
CREATE FUNCTION doorman_prune_expired_receipts(p_tenant uuid, p_expired_before timestamptz, p_limit bigint)
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
REVOKE ALL ON FUNCTION doorman_prune_expired_receipts(uuid, timestamptz, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_prune_expired_receipts(uuid, timestamptz, bigint) TO doorman_app;

CREATE OR REPLACE FUNCTION doorman_complete_receipt(
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

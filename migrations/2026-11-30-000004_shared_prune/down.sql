CREATE OR REPLACE FUNCTION doorman_complete_receipt(
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
DROP FUNCTION doorman_prune_expired_receipts(uuid, timestamptz, bigint);

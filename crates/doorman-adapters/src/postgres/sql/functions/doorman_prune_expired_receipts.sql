-- Deletes up to p_limit of a tenant's receipts claimed before p_expired_before, and the kept
-- payloads of the receipts it expires and the attempts started before it; returns how many
-- receipts it deleted.
-- Its history: migrations/ up to 2026-11-30-000008_accounting_and_replay.
CREATE OR REPLACE FUNCTION public.doorman_prune_expired_receipts(p_tenant uuid, p_expired_before timestamptz, p_limit bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pruned bigint := 0;
BEGIN
    IF EXISTS (SELECT FROM public.messaging_event_receipts AS e
                WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before) THEN
        DELETE FROM public.messaging_event_receipts AS r
         WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
            SELECT e.tenant_id, e.platform, e.external_event_id
              FROM public.messaging_event_receipts AS e
             WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
        GET DIAGNOSTICS v_pruned = ROW_COUNT;
    END IF;
    IF EXISTS (SELECT FROM public.messaging_event_payloads AS e
                WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before) THEN
        DELETE FROM public.messaging_event_payloads AS r
         WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
            SELECT e.tenant_id, e.platform, e.external_event_id
              FROM public.messaging_event_payloads AS e
             WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
    END IF;
    IF EXISTS (SELECT FROM public.messaging_event_attempts AS e
                WHERE e.tenant_id = p_tenant AND e.started_at < p_expired_before) THEN
        DELETE FROM public.messaging_event_attempts AS r
         WHERE (r.tenant_id, r.platform, r.external_event_id, r.started_at) IN (
            SELECT e.tenant_id, e.platform, e.external_event_id, e.started_at
              FROM public.messaging_event_attempts AS e
             WHERE e.tenant_id = p_tenant AND e.started_at < p_expired_before
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
    END IF;
    IF EXISTS (SELECT FROM public.messaging_request_replays AS e
                WHERE e.tenant_id = p_tenant AND e.expires_at < now()) THEN
        DELETE FROM public.messaging_request_replays AS r
         WHERE (r.tenant_id, r.signature) IN (
            SELECT e.tenant_id, e.signature FROM public.messaging_request_replays AS e
             WHERE e.tenant_id = p_tenant AND e.expires_at < now()
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN v_pruned;
END
$$;

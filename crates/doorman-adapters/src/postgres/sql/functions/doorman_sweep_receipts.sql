-- Marks every receipt claimed after the watermark and up to p_before (at most now) that has
-- no outcome; moves the watermark to p_before, but never closer to now than a minute. Returns
-- how many it marked. Across tenants, hence SECURITY DEFINER: it marks, and says a number.
-- A failure is an outcome: a failed receipt is not marked (it was, until issue 42: a tenant's
-- every failure then sat in the index of marked receipts, and its stranded list read them all,
-- 163 ms for 100,000 failures; `just bench-console`).
-- Its history: migrations/ up to 2026-12-02-000001_claims_and_outcomes_at_full_speed.
CREATE OR REPLACE FUNCTION public.doorman_sweep_receipts(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_from timestamptz;
    v_upto timestamptz := least(p_before, now());
    v_swept bigint;
BEGIN
    SELECT s.swept_before INTO v_from FROM public.messaging_receipt_sweep AS s FOR UPDATE;
    IF v_upto <= v_from THEN
        RETURN 0;
    END IF;
    UPDATE public.messaging_event_receipts AS r
       SET swept_at = now()
      FROM public.tenants AS t
     WHERE r.tenant_id = t.id AND r.claimed_at > v_from AND r.claimed_at <= v_upto
       AND r.handled_at IS NULL AND r.failure_reason IS NULL AND r.swept_at IS NULL;
    GET DIAGNOSTICS v_swept = ROW_COUNT;
    UPDATE public.messaging_receipt_sweep
       SET swept_before = greatest(v_from, least(v_upto, now() - interval '1 minute'));
    RETURN v_swept;
END
$$;

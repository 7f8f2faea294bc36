-- The gauges' two counts, after a sweep: stranded through the swept index, recently failed
-- through the failed one.
-- Its history: migrations/ up to 2026-12-02-000001_claims_and_outcomes_at_full_speed.
CREATE OR REPLACE FUNCTION public.doorman_receipt_counts(p_stranded_before timestamptz, p_failed_since timestamptz)
RETURNS TABLE (stranded bigint, failed_recent bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM public.doorman_sweep_receipts(p_stranded_before);
    RETURN QUERY SELECT
        (SELECT count(*) FROM public.messaging_event_receipts AS r
          WHERE r.swept_at IS NOT NULL
            AND public.doorman_is_stranded(r.handled_at, r.failure_reason, r.claimed_at, p_stranded_before)),
        (SELECT count(*) FROM public.messaging_event_receipts AS r
          WHERE r.failure_reason IS NOT NULL AND r.handled_at IS NULL AND r.failed_at >= p_failed_since);
END
$$;

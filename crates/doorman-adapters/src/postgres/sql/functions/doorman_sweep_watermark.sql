-- The watermark, for a claim inserted behind it: waits for a sweep in progress (its row lock)
-- so the claim reads where that sweep stopped.
-- Its history: migrations/ up to 2026-12-02-000001_claims_and_outcomes_at_full_speed.
CREATE OR REPLACE FUNCTION public.doorman_sweep_watermark() RETURNS timestamptz
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT s.swept_before FROM public.messaging_receipt_sweep AS s FOR SHARE $$;

-- Whether a receipt is stranded, stated once in SQL for every query that needs it: claimed before a threshold, never handled, no failure recorded (decision 3). Its
-- Rust twin is `Receipt::status` in the domain; a test holds the two equal. A one-expression SQL
-- function is inlined by the planner, so the partial index of unhandled receipts still serves.
-- Its history: migrations/ up to 2026-12-01-000002_stranded_and_sealed_rules_once.
CREATE OR REPLACE FUNCTION public.doorman_is_stranded(p_handled_at timestamptz, p_failure_reason text, p_claimed_at timestamptz, p_before timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT p_handled_at IS NULL AND p_failure_reason IS NULL AND p_claimed_at < p_before $$;

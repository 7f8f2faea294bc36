-- Two rules stated once in SQL, and used by every query that needs them.
--
-- 1. Stranded: claimed before a threshold, never handled, no failure recorded (decision 3). Its
-- Rust twin is `Receipt::status` in the domain; a test holds the two equal. A one-expression SQL
-- function is inlined by the planner, so the partial index of unhandled receipts still serves.
CREATE FUNCTION doorman_is_stranded(p_handled_at timestamptz, p_failure_reason text, p_claimed_at timestamptz, p_before timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT p_handled_at IS NULL AND p_failure_reason IS NULL AND p_claimed_at < p_before $$;

-- 2. The key a sealed value was sealed with: `v1:<key id>:<…>` (adapters' secrets.rs writes the
-- format), '' for a value stored before encryption.
CREATE FUNCTION doorman_sealed_key_id(p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN p_value LIKE 'v1:%:%' THEN split_part(p_value, ':', 2) ELSE '' END $$;

GRANT EXECUTE ON FUNCTION doorman_is_stranded(timestamptz, text, timestamptz, timestamptz) TO doorman_app, doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_sealed_key_id(text) TO doorman_app, doorman_admin;

CREATE OR REPLACE FUNCTION doorman_receipt_counts(p_stranded_before timestamptz, p_failed_since timestamptz)
RETURNS TABLE (stranded bigint, failed_recent bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FILTER (WHERE public.doorman_is_stranded(r.handled_at, r.failure_reason, r.claimed_at, p_stranded_before)),
           count(*) FILTER (WHERE r.failed_at >= p_failed_since)
      FROM public.messaging_event_receipts AS r
     WHERE r.handled_at IS NULL
$$;

CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT public.doorman_sealed_key_id(s.sealed), count(*)
      FROM (SELECT b.signing_secret AS sealed FROM public.agent_bridges AS b
            UNION ALL SELECT i.bot_token FROM public.messaging_installations AS i WHERE i.bot_token IS NOT NULL
            UNION ALL SELECT i.refresh_token FROM public.messaging_installations AS i WHERE i.refresh_token IS NOT NULL
            UNION ALL SELECT p.payload FROM public.messaging_event_payloads AS p) AS s
     GROUP BY 1
$$;

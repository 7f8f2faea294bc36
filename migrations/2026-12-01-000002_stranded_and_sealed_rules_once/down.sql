CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.sealed LIKE 'v1:%:%' THEN split_part(s.sealed, ':', 2) ELSE '' END, count(*)
      FROM (SELECT b.signing_secret AS sealed FROM public.agent_bridges AS b
            UNION ALL SELECT i.bot_token FROM public.messaging_installations AS i WHERE i.bot_token IS NOT NULL
            UNION ALL SELECT i.refresh_token FROM public.messaging_installations AS i WHERE i.refresh_token IS NOT NULL
            UNION ALL SELECT p.payload FROM public.messaging_event_payloads AS p) AS s
     GROUP BY 1
$$;

CREATE OR REPLACE FUNCTION doorman_receipt_counts(p_stranded_before timestamptz, p_failed_since timestamptz)
RETURNS TABLE (stranded bigint, failed_recent bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FILTER (WHERE r.failure_reason IS NULL AND r.claimed_at < p_stranded_before),
           count(*) FILTER (WHERE r.failed_at >= p_failed_since)
      FROM public.messaging_event_receipts AS r
     WHERE r.handled_at IS NULL
$$;

DROP FUNCTION doorman_sealed_key_id(text);
DROP FUNCTION doorman_is_stranded(timestamptz, text, timestamptz, timestamptz);

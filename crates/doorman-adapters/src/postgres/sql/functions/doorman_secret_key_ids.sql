-- How many stored secrets each encryption key sealed (key rotation's progress); across
-- tenants, hence SECURITY DEFINER: it answers counts only.
-- Its history: migrations/ up to 2026-12-01-000002_stranded_and_sealed_rules_once.
CREATE OR REPLACE FUNCTION public.doorman_secret_key_ids()
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

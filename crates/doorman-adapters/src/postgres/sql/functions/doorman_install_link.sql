-- The install link behind a token hash: its tenant and whether it has expired. Runs before a
-- tenant is known; answers for the one link whose token the caller holds.
-- Its history: migrations/ up to 2026-11-30-000007_installations.
CREATE OR REPLACE FUNCTION public.doorman_install_link(p_token_hash text)
RETURNS TABLE (tenant_id uuid, expired boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.tenant_id, l.expires_at <= now() FROM public.messaging_install_links AS l
     WHERE l.token_hash = p_token_hash
$$;

-- Takes an OAuth state: it must exist, be unexpired and unused, and have been started by this
-- browser; only then is it consumed. Runs before a tenant is known (the callback carries only
-- the state). Outcomes: ok, unknown, expired, used, other_browser.
-- Its history: migrations/ up to 2026-11-30-000007_installations.
CREATE OR REPLACE FUNCTION public.doorman_take_install_state(p_state_hash text, p_browser_hash text)
RETURNS TABLE (outcome text, tenant_id uuid, tenant_name text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_state public.messaging_install_states;
BEGIN
    SELECT * INTO v_state FROM public.messaging_install_states AS s
     WHERE s.state_hash = p_state_hash FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown'::text, NULL::uuid, NULL::text;
    ELSIF v_state.consumed_at IS NOT NULL THEN
        RETURN QUERY SELECT 'used'::text, NULL::uuid, NULL::text;
    ELSIF v_state.expires_at <= now() THEN
        RETURN QUERY SELECT 'expired'::text, NULL::uuid, NULL::text;
    ELSIF v_state.browser_hash <> p_browser_hash THEN
        -- Not consumed: another browser must not be able to spoil the real one's install.
        RETURN QUERY SELECT 'other_browser'::text, NULL::uuid, NULL::text;
    ELSE
        UPDATE public.messaging_install_states SET consumed_at = now() WHERE state_hash = p_state_hash;
        RETURN QUERY SELECT 'ok'::text, t.id, t.name FROM public.tenants AS t WHERE t.id = v_state.tenant_id;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN b.signing_secret LIKE 'v1:%:%' THEN split_part(b.signing_secret, ':', 2) ELSE '' END,
           count(*)
      FROM public.agent_bridges AS b
     GROUP BY 1
$$;
DROP FUNCTION doorman_remove_installation(uuid, text, text, text, boolean);
DROP FUNCTION doorman_record_installation(uuid, text, text, text, boolean, text, text, text, text, text, timestamptz);
DROP FUNCTION doorman_take_install_state(text, text);
DROP FUNCTION doorman_install_link(text);
DROP FUNCTION doorman_resolve(text, text, text);
CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid := public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id);
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    IF v_tenant IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('app.tenant_id', v_tenant::text, true);
    RETURN QUERY
        SELECT v_tenant, b.url, b.signing_secret, b.paused
          FROM (SELECT 1) AS one
          LEFT JOIN public.agent_bridges AS b ON b.tenant_id = v_tenant;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;
REVOKE ALL ON FUNCTION doorman_resolve(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text) TO doorman_app;
DROP TABLE messaging_installations;
DROP TABLE messaging_install_states;
DROP TABLE messaging_install_links;

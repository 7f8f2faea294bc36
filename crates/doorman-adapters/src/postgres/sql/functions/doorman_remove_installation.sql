-- Removes a workspace's link and installation for a tenant (an uninstall, or an operator
-- unlinking); says which it removed. Across tenants' links, hence SECURITY DEFINER.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_remove_installation(
    p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_org_wide boolean
) RETURNS TABLE (link_removed boolean, installation_removed boolean)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_team text := CASE WHEN p_org_wide THEN NULL ELSE p_team_id END;
    v_installations integer;
    v_links integer;
BEGIN
    DELETE FROM public.messaging_installations AS i
     WHERE i.tenant_id = p_tenant AND i.platform = p_platform
       AND public.doorman_link_named(i.team_id, i.enterprise_id, v_team, p_enterprise_id);
    GET DIAGNOSTICS v_installations = ROW_COUNT;
    DELETE FROM public.messaging_workspaces AS w
     WHERE w.tenant_id = p_tenant AND w.platform = p_platform
       AND public.doorman_link_named(w.team_id, w.enterprise_id, v_team, p_enterprise_id);
    GET DIAGNOSTICS v_links = ROW_COUNT;
    RETURN QUERY SELECT v_links > 0, v_installations > 0;
END
$$;

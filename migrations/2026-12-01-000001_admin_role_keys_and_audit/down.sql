REVOKE EXECUTE ON FUNCTION doorman_secret_key_ids() FROM doorman_admin;
REVOKE EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) FROM doorman_admin;
REVOKE EXECUTE ON FUNCTION doorman_resolve(text, text, text) FROM doorman_admin;
REVOKE EXECUTE ON FUNCTION doorman_resolve_workspace(text, text, text) FROM doorman_admin;
REVOKE ALL ON __diesel_schema_migrations, tenants, agent_bridges, messaging_workspaces, messaging_install_links,
    messaging_installations, messaging_event_receipts, messaging_event_payloads, messaging_request_replays
    FROM doorman_admin;
DROP POLICY admin_lists_every_tenant ON tenants;
DROP FUNCTION doorman_remove_installation(uuid, text, text, text, boolean);
CREATE FUNCTION doorman_remove_installation(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_org_wide boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_removed integer;
BEGIN
    DELETE FROM public.messaging_installations AS i
     WHERE i.tenant_id = p_tenant AND i.platform = p_platform
       AND ((NOT p_org_wide AND i.team_id = p_team_id) OR (p_org_wide AND i.team_id IS NULL AND i.enterprise_id = p_enterprise_id));
    DELETE FROM public.messaging_workspaces AS w
     WHERE w.tenant_id = p_tenant AND w.platform = p_platform
       AND ((NOT p_org_wide AND w.team_id = p_team_id) OR (p_org_wide AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id));
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    RETURN v_removed > 0;
END
$$;
REVOKE ALL ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) TO doorman_app;
DROP INDEX tenants_oldest_first;
DROP TABLE admin_idempotency;
DROP TABLE admin_audit;
DROP TABLE admin_keys;
-- The role stays: roles belong to the cluster, and other databases on it may use it.

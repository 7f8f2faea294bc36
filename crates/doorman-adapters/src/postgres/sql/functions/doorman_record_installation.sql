-- Records an installation (the OAuth callback): the tenant's link is checked against every
-- other tenant's (doorman_link_taken) and the installation stored; says what it did.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_record_installation(
    p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_is_enterprise_install boolean,
    p_app_id text, p_bot_user_id text, p_bot_token text, p_scopes text, p_refresh_token text,
    p_token_expires_at timestamptz
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_team text := CASE WHEN p_is_enterprise_install THEN NULL ELSE p_team_id END;
    v_existing bigint;
BEGIN
    IF v_team IS NULL AND p_enterprise_id IS NULL THEN
        RAISE EXCEPTION 'an installation needs a team or an enterprise';
    END IF;
    IF public.doorman_link_taken(p_tenant, p_platform, v_team, p_enterprise_id) THEN
        RETURN 'taken';
    END IF;
    IF NOT EXISTS (SELECT FROM public.messaging_workspaces AS w
                    WHERE w.platform = p_platform
                      AND public.doorman_link_named(w.team_id, w.enterprise_id, v_team, p_enterprise_id)) THEN
        INSERT INTO public.messaging_workspaces (tenant_id, platform, team_id, enterprise_id)
        VALUES (p_tenant, p_platform, v_team, p_enterprise_id);
    END IF;
    SELECT i.id INTO v_existing FROM public.messaging_installations AS i
     WHERE i.platform = p_platform AND public.doorman_link_named(i.team_id, i.enterprise_id, v_team, p_enterprise_id);
    IF v_existing IS NULL THEN
        INSERT INTO public.messaging_installations
            (tenant_id, platform, team_id, enterprise_id, is_enterprise_install, app_id, bot_user_id,
             bot_token, scopes, refresh_token, token_expires_at)
        VALUES (p_tenant, p_platform, v_team, p_enterprise_id, p_is_enterprise_install, p_app_id,
                p_bot_user_id, p_bot_token, p_scopes, p_refresh_token, p_token_expires_at);
        RETURN 'installed';
    END IF;
    UPDATE public.messaging_installations
       SET tenant_id = p_tenant, enterprise_id = p_enterprise_id, is_enterprise_install = p_is_enterprise_install,
           app_id = p_app_id, bot_user_id = p_bot_user_id, bot_token = p_bot_token, scopes = p_scopes,
           refresh_token = p_refresh_token, token_expires_at = p_token_expires_at, updated_at = now()
     WHERE id = v_existing;
    RETURN 'updated';
END
$$;

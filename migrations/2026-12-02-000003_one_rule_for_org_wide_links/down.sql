-- Back to the team link first, and the rule written where it was.
DROP FUNCTION doorman_link_taken(uuid, text, text, text);
DROP FUNCTION doorman_resolve(text, text, text, text);
DROP FUNCTION doorman_resolve_workspace(text, text, text, text);

CREATE OR REPLACE FUNCTION public.doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT tenant_id FROM (
        SELECT w.tenant_id, 1 AS rank FROM public.messaging_workspaces w
         WHERE w.platform = p_platform AND w.team_id = p_team_id
        UNION ALL
        SELECT w.tenant_id, 2 AS rank FROM public.messaging_workspaces w
         WHERE w.platform = p_platform AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id
    ) found
    ORDER BY rank
    LIMIT 1
$$;

CREATE OR REPLACE FUNCTION public.doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text) RETURNS TABLE(tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean, install_team_id text, install_enterprise_id text, install_bot_user_id text, install_bot_token text, install_scopes text, install_expires_at timestamp with time zone, install_refreshable boolean, retain_payloads boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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
        SELECT v_tenant, b.url, b.signing_secret, b.paused,
               i.team_id, i.enterprise_id, i.bot_user_id, i.bot_token, i.scopes,
               i.token_expires_at, i.refresh_token IS NOT NULL,
               coalesce(t.retain_payloads, false)
          FROM (SELECT 1) AS one
          LEFT JOIN public.tenants AS t ON t.id = v_tenant
          LEFT JOIN public.agent_bridges AS b ON b.tenant_id = v_tenant
          LEFT JOIN LATERAL (
              SELECT * FROM public.messaging_installations AS x
               WHERE x.tenant_id = v_tenant AND x.platform = p_platform
                 AND (x.team_id = p_team_id OR (x.team_id IS NULL AND x.enterprise_id = p_enterprise_id))
               ORDER BY x.team_id IS NULL
               LIMIT 1
          ) AS i ON true;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION public.doorman_record_installation(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_is_enterprise_install boolean, p_app_id text, p_bot_user_id text, p_bot_token text, p_scopes text, p_refresh_token text, p_token_expires_at timestamp with time zone) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_team text := CASE WHEN p_is_enterprise_install THEN NULL ELSE p_team_id END;
    v_owner uuid;
    v_existing bigint;
BEGIN
    IF v_team IS NULL AND p_enterprise_id IS NULL THEN
        RAISE EXCEPTION 'an installation needs a team or an enterprise';
    END IF;
    -- One install of one workspace at a time, whichever process takes it.
    PERFORM pg_advisory_xact_lock(hashtext(format('install:%s:%s:%s', p_platform, coalesce(v_team, ''), coalesce(p_enterprise_id, ''))));
    SELECT w.tenant_id INTO v_owner FROM public.messaging_workspaces AS w
     WHERE w.platform = p_platform
       AND ((v_team IS NOT NULL AND w.team_id = v_team) OR (v_team IS NULL AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id));
    IF v_owner IS NOT NULL AND v_owner <> p_tenant THEN
        RETURN 'taken';
    END IF;
    IF v_owner IS NULL THEN
        INSERT INTO public.messaging_workspaces (tenant_id, platform, team_id, enterprise_id)
        VALUES (p_tenant, p_platform, v_team, p_enterprise_id);
    END IF;
    SELECT i.id INTO v_existing FROM public.messaging_installations AS i
     WHERE i.platform = p_platform
       AND ((v_team IS NOT NULL AND i.team_id = v_team) OR (v_team IS NULL AND i.team_id IS NULL AND i.enterprise_id = p_enterprise_id));
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

CREATE OR REPLACE FUNCTION public.doorman_remove_installation(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_org_wide boolean) RETURNS TABLE(link_removed boolean, installation_removed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_installations integer;
    v_links integer;
BEGIN
    DELETE FROM public.messaging_installations AS i
     WHERE i.tenant_id = p_tenant AND i.platform = p_platform
       AND ((NOT p_org_wide AND i.team_id = p_team_id) OR (p_org_wide AND i.team_id IS NULL AND i.enterprise_id = p_enterprise_id));
    GET DIAGNOSTICS v_installations = ROW_COUNT;
    DELETE FROM public.messaging_workspaces AS w
     WHERE w.tenant_id = p_tenant AND w.platform = p_platform
       AND ((NOT p_org_wide AND w.team_id = p_team_id) OR (p_org_wide AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id));
    GET DIAGNOSTICS v_links = ROW_COUNT;
    RETURN QUERY SELECT v_links > 0, v_installations > 0;
END
$$;

DROP FUNCTION doorman_link_named(text, text, text, text);

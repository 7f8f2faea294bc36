-- One rule for org-wide links, stated once (decision 20).
--
-- Until now a team link always won: tenant A linking team T5 (nothing proves it is A's, nothing
-- says it is inside enterprise E1) took every delivery of T5 that did not say it was for an
-- org-wide install, even while tenant B held E1 org-wide. Now:
-- - which link a delivery goes to is doorman_resolve_workspace's, with what the delivery says of
--   its installation (p_scope): one that says it is for an org-wide install goes to the
--   enterprise's org-wide link only; one that says it is for a team's install goes to the team's
--   link, or, when no tenant links the team, to the org-wide link of the enterprise it names (an
--   org-wide install takes its teams' events); one that does not say ('unstated') goes to the
--   org-wide link of the enterprise it names first, then to the team's link;
-- - a new link must not take deliveries another tenant's link receives (doorman_link_taken): a
--   team another tenant links; an enterprise another tenant links org-wide; for an org-wide
--   link, a team another tenant links as inside that enterprise; for a team linked as inside an
--   enterprise, that enterprise held org-wide by another tenant. Both faces and the install flow
--   ask it, under one lock per enterprise (or team);
-- - which stored link or installation a workspace names is doorman_link_named's.
-- The three-argument functions the previous release calls stay (expand, then contract a release
-- later), and apply the same rule: a delivery naming no team is org-wide, any other unstated.

CREATE FUNCTION doorman_link_named(p_row_team text, p_row_enterprise text, p_team_id text, p_enterprise_id text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_team_id IS NOT NULL THEN p_row_team = p_team_id
                ELSE p_row_team IS NULL AND p_row_enterprise = p_enterprise_id END
$$;
GRANT EXECUTE ON FUNCTION doorman_link_named(text, text, text, text) TO doorman_app, doorman_admin;

CREATE FUNCTION doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text, p_scope text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tenant_id FROM (
        SELECT w.tenant_id, CASE WHEN p_scope = 'team' THEN 2 ELSE 1 END AS rank
          FROM public.messaging_workspaces w
         WHERE p_enterprise_id IS NOT NULL
           AND w.platform = p_platform AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id
        UNION ALL
        SELECT w.tenant_id, CASE WHEN p_scope = 'team' THEN 1 ELSE 2 END AS rank
          FROM public.messaging_workspaces w
         WHERE p_scope <> 'org_wide' AND p_team_id IS NOT NULL
           AND w.platform = p_platform AND w.team_id = p_team_id
    ) found
    ORDER BY rank
    LIMIT 1
$$;
REVOKE ALL ON FUNCTION doorman_resolve_workspace(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve_workspace(text, text, text, text) TO doorman_app, doorman_admin;

CREATE OR REPLACE FUNCTION doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id,
        CASE WHEN p_team_id IS NULL THEN 'org_wide' ELSE 'unstated' END)
$$;

CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text, p_scope text)
RETURNS TABLE(tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean, install_team_id text,
              install_enterprise_id text, install_bot_user_id text, install_bot_token text, install_scopes text,
              install_expires_at timestamp with time zone, install_refreshable boolean, retain_payloads boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid := public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id, p_scope);
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
REVOKE ALL ON FUNCTION doorman_resolve(text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text, text) TO doorman_app, doorman_admin;

CREATE OR REPLACE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE(tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean, install_team_id text,
              install_enterprise_id text, install_bot_user_id text, install_bot_token text, install_scopes text,
              install_expires_at timestamp with time zone, install_refreshable boolean, retain_payloads boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT * FROM public.doorman_resolve(p_platform, p_team_id, p_enterprise_id,
        CASE WHEN p_team_id IS NULL THEN 'org_wide' ELSE 'unstated' END);
END
$$;

-- Whether a link of p_team_id (or, with no team, an org-wide link of p_enterprise_id) for
-- p_tenant would take deliveries another tenant's link receives. Holds a lock on the
-- enterprise (or the team) until the caller's transaction ends, so two links that would
-- collide are decided one after the other. Across tenants, hence SECURITY DEFINER: it answers
-- yes or no.
CREATE FUNCTION doorman_link_taken(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(format('link:%s:%s', p_platform, coalesce(p_enterprise_id, p_team_id))));
    RETURN EXISTS (
        SELECT FROM public.messaging_workspaces AS w
         WHERE w.platform = p_platform AND w.tenant_id <> p_tenant
           AND (-- the same team, or the same enterprise org-wide
                public.doorman_link_named(w.team_id, w.enterprise_id, p_team_id, p_enterprise_id)
                -- an org-wide link: a team another tenant links as inside the enterprise
             OR (p_team_id IS NULL AND w.team_id IS NOT NULL AND w.enterprise_id = p_enterprise_id)
                -- a team inside an enterprise: the enterprise held org-wide by another tenant
             OR (p_team_id IS NOT NULL AND p_enterprise_id IS NOT NULL
                 AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id)));
END
$$;
REVOKE ALL ON FUNCTION doorman_link_taken(uuid, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_link_taken(uuid, text, text, text) TO doorman_admin;

CREATE OR REPLACE FUNCTION doorman_record_installation(
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

CREATE OR REPLACE FUNCTION doorman_remove_installation(
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

-- Slack app installation (OAuth v2): install links an operator hands a customer, one-time
-- OAuth states bound to a browser, and the installations themselves (bot tokens sealed).

-- Install links: a token in a URL that starts installs for one tenant until it expires. Only
-- its SHA-256 is stored. Looked up before any tenant is known (doorman_install_link).
CREATE TABLE messaging_install_links (
    token_hash  text        PRIMARY KEY,
    tenant_id   uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX messaging_install_links_tenant ON messaging_install_links (tenant_id);
ALTER TABLE messaging_install_links ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_install_links
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- OAuth states: one per started install, one-time, ten minutes, bound to the browser that
-- started it (the SHA-256 of a nonce in an HttpOnly cookie). Hashes only.
CREATE TABLE messaging_install_states (
    state_hash    text        PRIMARY KEY,
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    browser_hash  text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    consumed_at   timestamptz
);
CREATE INDEX messaging_install_states_expiry ON messaging_install_states (tenant_id, expires_at);
ALTER TABLE messaging_install_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_install_states
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, DELETE ON messaging_install_states TO doorman_app;

-- Installations: one per workspace (a team, or an enterprise for an org-wide install), the
-- same keys as messaging_workspaces. Tokens are sealed (v1:<key>:…), the bot token is null
-- once Slack revoked it.
CREATE TABLE messaging_installations (
    id                     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id              uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    platform               text        NOT NULL,
    team_id                text,
    enterprise_id          text,
    is_enterprise_install  boolean     NOT NULL,
    app_id                 text        NOT NULL,
    bot_user_id            text        NOT NULL,
    bot_token              text,
    scopes                 text        NOT NULL,
    refresh_token          text,
    token_expires_at       timestamptz,
    installed_at           timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (team_id IS NOT NULL OR enterprise_id IS NOT NULL)
);
CREATE UNIQUE INDEX messaging_installations_team_key
    ON messaging_installations (platform, team_id) WHERE team_id IS NOT NULL;
CREATE UNIQUE INDEX messaging_installations_org_key
    ON messaging_installations (platform, enterprise_id) WHERE team_id IS NULL;
CREATE INDEX messaging_installations_tenant ON messaging_installations (tenant_id);
ALTER TABLE messaging_installations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_installations
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- The server refreshes rotating tokens (a row lock serialises it) and forgets revoked ones;
-- installing and uninstalling, which touch the directory, go through the functions below.
GRANT SELECT, UPDATE ON messaging_installations TO doorman_app;
CREATE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON messaging_installations
    FOR EACH ROW EXECUTE FUNCTION doorman_notify_tenant_change();

-- Resolve now also returns the workspace's installation (team first, then the org-wide one),
-- read under the tenant's policy.
DROP FUNCTION doorman_resolve(text, text, text);
CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (
    tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean,
    install_team_id text, install_enterprise_id text, install_bot_user_id text,
    install_bot_token text, install_scopes text, install_expires_at timestamptz,
    install_refreshable boolean
)
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
        SELECT v_tenant, b.url, b.signing_secret, b.paused,
               i.team_id, i.enterprise_id, i.bot_user_id, i.bot_token, i.scopes,
               i.token_expires_at, i.refresh_token IS NOT NULL
          FROM (SELECT 1) AS one
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
REVOKE ALL ON FUNCTION doorman_resolve(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text) TO doorman_app;

-- The install link behind a token hash: its tenant and whether it has expired. Runs before a
-- tenant is known; answers for the one link whose token the caller holds.
CREATE FUNCTION doorman_install_link(p_token_hash text)
RETURNS TABLE (tenant_id uuid, expired boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.tenant_id, l.expires_at <= now() FROM public.messaging_install_links AS l
     WHERE l.token_hash = p_token_hash
$$;

-- Takes an OAuth state: it must exist, be unexpired and unused, and have been started by this
-- browser; only then is it consumed. Runs before a tenant is known (the callback carries only
-- the state). Outcomes: ok, unknown, expired, used, other_browser.
CREATE FUNCTION doorman_take_install_state(p_state_hash text, p_browser_hash text)
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

-- Records an installation and links its workspace to the tenant, in one transaction:
-- 'installed' (new), 'updated' (the same tenant installed again: new token, new scopes) or
-- 'taken' (the workspace belongs to another tenant: nothing changed). The server cannot write
-- the directory itself (decision 12); this is the one narrow way it links a workspace.
CREATE FUNCTION doorman_record_installation(
    p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text,
    p_is_enterprise_install boolean, p_app_id text, p_bot_user_id text, p_bot_token text,
    p_scopes text, p_refresh_token text, p_token_expires_at timestamptz
) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- Removes a tenant's installation of a workspace and the workspace's link (Slack said the
-- app was uninstalled there). Touches only rows of p_tenant.
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

REVOKE ALL ON FUNCTION doorman_install_link(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_take_install_state(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_record_installation(uuid, text, text, text, boolean, text, text, text, text, text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_install_link(text) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_take_install_state(text, text) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_record_installation(uuid, text, text, text, boolean, text, text, text, text, text, timestamptz) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) TO doorman_app;

-- Key ids now cover the installations' tokens too.
CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN v LIKE 'v1:%:%' THEN split_part(v, ':', 2) ELSE '' END, count(*)
      FROM (SELECT b.signing_secret AS v FROM public.agent_bridges AS b
            UNION ALL SELECT i.bot_token FROM public.messaging_installations AS i WHERE i.bot_token IS NOT NULL
            UNION ALL SELECT i.refresh_token FROM public.messaging_installations AS i WHERE i.refresh_token IS NOT NULL) AS stored
     GROUP BY 1
$$;

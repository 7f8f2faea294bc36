-- Which tenant, agent and installation a delivery goes to, with what the delivery says of its
-- installation (p_scope: org_wide, team or unstated; ADR 20); see doorman_link_named.sql.
-- retain_payloads: whether the claim keeps the payload, for an operator's replay or for the
-- tenant's redelivery (ADR 26).
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links; its body since
-- 2026-12-08-000001_redelivery.
CREATE OR REPLACE FUNCTION public.doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text, p_scope text)
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
               coalesce(t.retain_payloads OR t.redelivery_schedule IS NOT NULL, false)
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

-- The three-argument form the previous release calls stays until the release after the one
-- that stopped calling it (expand, then contract): a delivery naming no team is org-wide, any
-- other unstated.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
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

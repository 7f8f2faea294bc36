-- Which tenant's link a delivery goes to (ADR 20); see doorman_link_named.sql.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text, p_scope text)
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

-- The three-argument form the previous release calls stays until the release after the one
-- that stopped calling it (expand, then contract): a delivery naming no team is org-wide, any
-- other unstated.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id,
        CASE WHEN p_team_id IS NULL THEN 'org_wide' ELSE 'unstated' END)
$$;

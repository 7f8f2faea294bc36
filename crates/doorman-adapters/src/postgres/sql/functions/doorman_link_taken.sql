-- Whether a link of p_team_id (or, with no team, an org-wide link of p_enterprise_id) for
-- p_tenant would take deliveries another tenant's link receives. Holds a lock on the
-- enterprise (or the team) until the caller's transaction ends, so two links that would
-- collide are decided one after the other. Across tenants, hence SECURITY DEFINER: it answers
-- yes or no.
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_link_taken(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text)
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

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
-- Its history: migrations/ up to 2026-12-02-000003_one_rule_for_org_wide_links.
CREATE OR REPLACE FUNCTION public.doorman_link_named(p_row_team text, p_row_enterprise text, p_team_id text, p_enterprise_id text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_team_id IS NOT NULL THEN p_row_team = p_team_id
                ELSE p_row_team IS NULL AND p_row_enterprise = p_enterprise_id END
$$;

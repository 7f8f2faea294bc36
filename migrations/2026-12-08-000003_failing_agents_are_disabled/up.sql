-- Agents that keep failing are disabled (issue 41). Each serving process keeps, for a tenant whose
-- circuit it opened, since when its agent has been failing (failing_since: the first of the
-- failures that opened it, kept if already set) and when it last saw it fail (failing_seen_at:
-- the opening, and each failed probe after it), and clears both when a dispatch succeeds and the
-- circuit closes. Once a minute, an agent failing for longer than DOORMAN_AGENT_DISABLE_AFTER and
-- seen failing recently is paused by Doorman itself (disabled_at), audited as agent.disable by
-- actor `doorman`; one not seen failing recently (the process that saw it died, or no delivery
-- came) is failing no more; an operator's resume clears all three.
--
-- Expand only: new nullable columns, a wider check, one new function.
ALTER TABLE agent_bridges
    ADD COLUMN failing_since timestamptz,
    ADD COLUMN failing_seen_at timestamptz,
    ADD COLUMN disabled_at timestamptz;
-- The serving process writes these two columns of an agent, for the tenant it acts for
-- (row-level security), and nothing else of it.
GRANT UPDATE (failing_since, failing_seen_at) ON agent_bridges TO doorman_app;

ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_actor_kind_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_actor_kind_check
    CHECK (actor_kind = ANY (ARRAY['key'::text, 'cli'::text, 'doorman'::text]));

-- Forgets failures not seen since p_seen_after, then pauses every agent failing since before
-- p_failing_before and audits it; its body is
-- postgres/sql/functions/doorman_disable_failing_agents.sql.
CREATE FUNCTION doorman_disable_failing_agents(p_failing_before timestamptz, p_seen_after timestamptz)
RETURNS TABLE(tenant_id uuid, failing_since timestamptz) LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_disable_failing_agents.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_disable_failing_agents(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_disable_failing_agents(timestamptz, timestamptz) TO doorman_app;

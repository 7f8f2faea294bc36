-- First forgets the failures of agents no process has seen fail since p_seen_after (the process
-- that saw them died, or no delivery came: not "every delivery failed"), then pauses every agent
-- whose every delivery has failed since before p_failing_before (never later than now) and that
-- was seen failing since p_seen_after, marks it disabled, and audits each as agent.disable by
-- Doorman itself; returns the tenants disabled now. Across tenants, hence SECURITY DEFINER: run
-- once a minute by each serving process, it pauses and says which.
-- Its history: migrations/2026-12-08-000003_failing_agents_are_disabled.
CREATE OR REPLACE FUNCTION public.doorman_disable_failing_agents(p_failing_before timestamptz, p_seen_after timestamptz)
RETURNS TABLE(tenant_id uuid, failing_since timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE public.agent_bridges AS b
       SET failing_since = NULL, failing_seen_at = NULL
     WHERE b.failing_since IS NOT NULL
       AND (b.failing_seen_at IS NULL OR b.failing_seen_at < p_seen_after);
    RETURN QUERY
        WITH disabled AS (
            UPDATE public.agent_bridges AS b
               SET paused = true, disabled_at = now(), updated_at = now()
             WHERE b.failing_since < least(p_failing_before, now()) AND NOT b.paused
            RETURNING b.tenant_id, b.failing_since
        ), audited AS (
            INSERT INTO public.admin_audit (actor_kind, actor_id, actor_name, action, tenant_id, target, request_id)
            SELECT 'doorman', 'doorman', 'doorman', 'agent.disable', d.tenant_id,
                   'failing since ' || to_char(d.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   'doorman-disable-' || d.tenant_id::text
              FROM disabled AS d
        )
        SELECT d.tenant_id, d.failing_since FROM disabled AS d;
END
$$;

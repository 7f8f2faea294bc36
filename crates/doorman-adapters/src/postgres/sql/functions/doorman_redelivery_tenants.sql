-- The tenants with redelivery on whose agent is set and not paused, their schedules, and whether
-- they keep payloads for replay (a spent schedule then leaves the payload): the redelivery
-- runner's list (ADR 26). Across tenants, hence SECURITY DEFINER: it answers tenant ids, delays
-- and a flag, nothing else. A paused tenant's redeliveries wait for the resume.
-- Its history: migrations/2026-12-08-000001_redelivery.
CREATE OR REPLACE FUNCTION public.doorman_redelivery_tenants() RETURNS TABLE(tenant_id uuid, schedule integer[], retain_payloads boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id, t.redelivery_schedule, t.retain_payloads
      FROM public.tenants AS t
      JOIN public.agent_bridges AS b ON b.tenant_id = t.id
     WHERE t.redelivery_schedule IS NOT NULL AND NOT b.paused
     ORDER BY t.id
$$;

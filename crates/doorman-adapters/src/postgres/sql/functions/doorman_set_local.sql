-- One PostgreSQL runs the hot path as it did before Citus (ADR 22); what Citus needs is given
-- to a Citus database only, by `doorman migrate` (postgres/citus.sql, citus_routed.sql).
--
-- Measured (docs/benchmarks.md): after migrations 2026-12-03-000001/000002 one PostgreSQL
-- acknowledged about half of what it did (busy shape: ~1,600 against 6,000-7,000 2xx/s, the
-- rest 503 busy). pgbench, one tenant, 256 claims then 256 outcomes per call, on a fresh
-- database: 2,956 then 1,239 events/s in two runs (slower as the tenant's receipts grow),
-- against 27,171 and 33,524 before. With only 000002's functions back (no `tenant_id =
-- ANY (p_tenants)`, cached plans): 23,988 and 22,456; with the policies' tenant list read once
-- per statement again and set_config as before, too: 26,582 and 31,716. Both were for Citus.
--
-- So here: doorman_set_local is set_config(…, true) again (citus_routed.sql makes it a
-- `SET LOCAL`, which Citus forwards to the workers); the receipts', payloads' and fingerprints'
-- policies read the tenant list once per statement again (citus.sql gives a Citus database the
-- per-row form, the one Citus accepts in a distributed table's policy); the outcome, fingerprint
-- and settle batches are joined to the batch only, with cached plans (citus_routed.sql defines
-- Citus's own).
-- Its history: migrations/ up to 2026-12-04-000001_one_postgresql_keeps_its_earlier_plans.
CREATE OR REPLACE FUNCTION public.doorman_set_local(p_name text, p_value text) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
BEGIN
    IF p_name NOT IN ('app.tenant_id', 'app.tenant_ids', 'app.all_tenants') THEN
        RAISE EXCEPTION 'doorman_set_local sets only Doorman''s own settings, not %', p_name;
    END IF;
    RETURN set_config(p_name, coalesce(p_value, ''), true);
END
$function$;

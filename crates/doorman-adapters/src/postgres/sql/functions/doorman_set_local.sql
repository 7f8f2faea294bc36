-- Names the transaction's tenants (app.tenant_id, app.tenant_ids) or says it crosses them
-- (app.all_tenants), and nothing else: set_config(…, true), which ends with the transaction.
-- Citus has its own form (doorman_set_local.citus.sql: a SET LOCAL, which reaches the workers).
--
-- Measured (docs/benchmarks.md): with Citus's forms on one PostgreSQL it acknowledged about half
-- of what it did (busy shape: ~1,600 against 6,000-7,000 2xx/s, the rest 503 busy). pgbench, one
-- tenant, 256 claims then 256 outcomes per call, on a fresh database: 2,956 then 1,239 events/s
-- in two runs, against 27,171 and 33,524 before; with this form, the policies' tenant list read
-- once per statement and the batches joined to the batch only with cached plans: 26,582 and
-- 31,716. So one PostgreSQL keeps these forms, and a Citus database gets its own (ADR 22, 23).
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

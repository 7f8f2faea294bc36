-- Why Citus has its own form (ADR 22, ADR 23):
-- Tenants are named with `SET LOCAL`, which Citus forwards to the workers that run a
-- transaction's statements (with citus.propagate_set_commands = 'local', set by citus.sql), so
-- the shards' policies see them; set_config(), what one PostgreSQL uses, stays in the
-- coordinator's backend, and a shard's policy would see no tenant and refuse every row.
CREATE OR REPLACE FUNCTION public.doorman_set_local(p_name text, p_value text) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
BEGIN
    IF p_name NOT IN ('app.tenant_id', 'app.tenant_ids', 'app.all_tenants') THEN
        RAISE EXCEPTION 'doorman_set_local sets only Doorman''s own settings, not %', p_name;
    END IF;
    EXECUTE format('SET LOCAL %s = %L', p_name, coalesce(p_value, ''));
    RETURN p_value;
END
$function$;

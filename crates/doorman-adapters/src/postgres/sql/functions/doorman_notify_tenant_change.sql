-- The directory notice of a change to a tenant or its agent (`tenant:<tenant id>`), for the
-- doorman_directory_notice triggers on tenants, agent_bridges and messaging_installations
-- (triggers/doorman_directory_notice.sql).
-- Its history: migrations/ up to 2026-11-30-000005_group_commit_and_directory_notices.
CREATE OR REPLACE FUNCTION public.doorman_notify_tenant_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- agent_bridges rows carry tenant_id; tenants rows carry id.
    IF TG_TABLE_NAME = 'tenants' THEN
        PERFORM pg_notify('doorman_directory', 'tenant:' || coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('doorman_directory', 'tenant:' || coalesce(NEW.tenant_id, OLD.tenant_id)::text);
    END IF;
    RETURN NULL;
END
$$;

-- Directory notices: every change to who owns a workspace, or to a tenant's agent, is
-- announced on the channel doorman_directory when its transaction commits, naming what it
-- changed, so each process drops exactly that from its in-memory directory.
--   workspace:<platform>:<team id or empty>:<enterprise id or empty>
--   tenant:<tenant id>
-- Its history: migrations/ up to 2026-11-30-000005_group_commit_and_directory_notices.
CREATE OR REPLACE FUNCTION public.doorman_notify_workspace_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('doorman_directory', format('workspace:%s:%s:%s',
            OLD.platform, coalesce(OLD.team_id, ''), coalesce(OLD.enterprise_id, '')));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('doorman_directory', format('workspace:%s:%s:%s',
            NEW.platform, coalesce(NEW.team_id, ''), coalesce(NEW.enterprise_id, '')));
    END IF;
    RETURN NULL;
END
$$;

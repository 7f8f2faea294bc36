-- Holds the shards a Citus node's batch writes in their own tables (ADR 30). One PostgreSQL has
-- no shards and never calls it: its form refuses. The Citus form beside it is the real one.
CREATE OR REPLACE FUNCTION public.doorman_hold_shards(p_shards bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'doorman_hold_shards: there are no shards on one PostgreSQL';
END
$$;

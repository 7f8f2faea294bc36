-- On Citus, a tenant's batch is written in its shards' own tables on the node that holds them
-- (ADR 30), once that node has confirmed, under the lock Citus's own writes take, that it still
-- holds them: doorman_hold_shards (its body is postgres/sql/functions/doorman_hold_shards.sql,
-- and its Citus form beside it). Only the serving processes call it.
--
-- Expand only: a new function; the previous release never calls it.
CREATE FUNCTION doorman_hold_shards(p_shards bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_hold_shards.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_hold_shards(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_hold_shards(bigint[]) TO doorman_app;

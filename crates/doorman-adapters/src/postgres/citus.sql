-- Doorman on a Citus coordinator (ADR 22). Run by `doorman migrate` after the migrations and the
-- SQL definitions (ADR 23), when the database has the citus extension; every statement is safe
-- to run again.
--
-- The receipts, the payloads kept for replay, the request fingerprints and the attempts on
-- record are distributed by tenant_id and co-located: one tenant's rows of all four sit in
-- shards on the same worker,
-- so a batch's claims, payloads and outcomes for that tenant are one worker's work. Existing
-- rows are copied into the shards (the table is locked while they are).
--
-- The directory (tenants, workspaces, agents, installations, install links and states, keys,
-- audit, idempotency) and the sweep's watermark stay ordinary tables on the coordinator: small,
-- written rarely, read through each process's cached directory, and their triggers' NOTIFY
-- reaches every process LISTENing on the coordinator as before.
-- The policies of the four tables are in the form Citus accepts in a distributed table's
-- (postgres/sql/policies/*.citus.sql), applied by `doorman migrate` before this script.

DO $citus$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['messaging_event_receipts', 'messaging_event_payloads', 'messaging_request_replays', 'messaging_event_attempts'] LOOP
        IF NOT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = v_table::regclass) THEN
            IF v_table = 'messaging_event_receipts' THEN
                PERFORM create_distributed_table(v_table, 'tenant_id');
            ELSE
                PERFORM create_distributed_table(v_table, 'tenant_id', colocate_with => 'messaging_event_receipts');
            END IF;
            RAISE NOTICE 'distributed % by tenant_id', v_table;
        END IF;
    END LOOP;
    -- A SET LOCAL (doorman_set_local) is forwarded to the workers that run a transaction's
    -- statements, so the shards' row-level security sees the tenants it names. Every new
    -- session of this database has it; without it the shards see no tenant and refuse every
    -- row (fail closed).
    EXECUTE format('ALTER DATABASE %I SET citus.propagate_set_commands = %L', current_database(), 'local');
END
$citus$;

-- Citus reaches the workers as the role a statement runs as. The group roles doorman_app and
-- doorman_admin stay NOLOGIN: anyone who could log in to a worker as one of them could name any
-- tenant there. Doorman's processes log in as roles of their own that inherit them (so no
-- SET ROLE is taken, and Citus logs in to the workers as those logins: pool::act_as). An
-- earlier release made them LOGIN here; `doorman serve` warns while they still are, and the
-- operator turns it off once every process runs this release (docs/operations.md).


-- Redelivery, opt-in per tenant (issue 41, ADR 26). A tenant with a schedule keeps each event's
-- payload (sealed) from its claim until it is handled or given up, and a runner in every serving
-- process sends the tenant's failed and stranded events again on that schedule.
--
-- Nothing on the hot path changes: whether an event is due is worked out from what its receipt
-- already keeps (its last failure's time, or its claim's for one that never finished) and the
-- tenant's schedule, by the runner's own statement; the runner's lease is the payload's hold, the
-- one an operator's replay takes, so the two never send an event at once.
--
-- Expand only: new nullable or defaulted columns and one new function.

-- The delays, in seconds, before each redelivery (after the attempt before it ended); null: off.
ALTER TABLE tenants ADD COLUMN redelivery_schedule integer[];
ALTER TABLE tenants ADD CONSTRAINT tenants_redelivery_schedule_check CHECK (
    redelivery_schedule IS NULL
    OR (cardinality(redelivery_schedule) BETWEEN 1 AND 20
        AND 0 <= ALL (redelivery_schedule) AND 86400 >= ALL (redelivery_schedule)
        AND array_position(redelivery_schedule, NULL) IS NULL));

-- How many redeliveries of the event were taken (each one counts when it is taken, so a process
-- killed while sending one has spent it), and when its spent schedule was given up. Neither is
-- indexed: a completion stays a heap-only update.
ALTER TABLE messaging_event_receipts
    ADD COLUMN redeliveries smallint NOT NULL DEFAULT 0,
    ADD COLUMN gave_up_at timestamptz;
ALTER TABLE messaging_event_receipts
    ADD CONSTRAINT messaging_event_receipts_redeliveries_check CHECK (redeliveries >= 0);

-- The tenants with redelivery on and an agent not paused, their schedules and whether they keep
-- payloads for replay: the runner's list, across tenants (its body is
-- postgres/sql/functions/doorman_redelivery_tenants.sql).
CREATE FUNCTION doorman_redelivery_tenants() RETURNS TABLE(tenant_id uuid, schedule integer[], retain_payloads boolean)
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_redelivery_tenants.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_redelivery_tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_redelivery_tenants() TO doorman_app;

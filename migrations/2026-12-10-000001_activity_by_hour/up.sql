-- Each tenant's activity by hour (issue 42): how many deliveries its agent took and how many
-- failed, and how long they took, for the console's charts (24 hours, 7 days) and the overview
-- of the tenants failing most, read without scanning receipts per page view.
--
-- Kept as events complete, at no cost on the hot path: each serving process counts its
-- dispatches' outcomes in memory, by tenant and hour, and adds them here every few seconds in
-- one statement (doorman_add_activity), and once more when it shuts down. A process killed
-- loses at most its last few seconds of counts (the receipts are the record; this is a view of
-- them). On Citus it stays on the coordinator, beside the directory: small, written a few times
-- a minute per process, read across tenants by the overview.
--
-- Expand only: a new table and a new function.
CREATE TABLE messaging_activity_hours (
    tenant_id      uuid        NOT NULL,
    hour           timestamptz NOT NULL,
    -- Dispatches the agent took, and those that failed (each attempt once: a replay or a
    -- redelivery counts again).
    delivered      bigint      NOT NULL DEFAULT 0,
    failed         bigint      NOT NULL DEFAULT 0,
    -- The dispatches' time, from the request to the answer written, in milliseconds: their sum
    -- (the hour's mean is sum / (delivered + failed)) and the longest.
    dispatch_ms    bigint      NOT NULL DEFAULT 0,
    dispatch_ms_max integer    NOT NULL DEFAULT 0,
    CONSTRAINT messaging_activity_hours_pkey PRIMARY KEY (tenant_id, hour),
    CONSTRAINT messaging_activity_hours_counts CHECK (delivered >= 0 AND failed >= 0 AND dispatch_ms >= 0 AND dispatch_ms_max >= 0)
);
-- "The tenants failing most since then": the overview, across tenants.
CREATE INDEX messaging_activity_hours_by_hour ON messaging_activity_hours (hour);
ALTER TABLE messaging_activity_hours ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, UPDATE, DELETE ON messaging_activity_hours TO doorman_app;
GRANT SELECT ON messaging_activity_hours TO doorman_admin;

CREATE FUNCTION doorman_add_activity(
    p_tenants uuid[], p_hours timestamptz[], p_delivered bigint[], p_failed bigint[],
    p_dispatch_ms bigint[], p_dispatch_ms_max integer[], p_keep_after timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'defined by postgres/sql/functions/doorman_add_activity.sql: run doorman migrate';
END
$$;
REVOKE ALL ON FUNCTION doorman_add_activity(uuid[], timestamptz[], bigint[], bigint[], bigint[], integer[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_add_activity(uuid[], timestamptz[], bigint[], bigint[], bigint[], integer[], timestamptz) TO doorman_app;

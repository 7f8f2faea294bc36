-- One row per numbered inbound event, written (and committed) before the event is dispatched.
-- The primary key is the unique index that arbitrates between concurrent deliveries of the
-- same event: exactly (tenant_id, platform, external_event_id), tenant-local by design.
CREATE TABLE messaging_event_receipts (
    tenant_id          uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    platform           text        NOT NULL,
    external_event_id  text        NOT NULL CHECK (length(external_event_id) BETWEEN 1 AND 255),
    event_type         text        NOT NULL,
    delivery_attempt   integer     NOT NULL CHECK (delivery_attempt >= 0),
    claimed_at         timestamptz NOT NULL,
    -- Null until the agent accepted the dispatch. Claimed long ago, still null and no
    -- failure: a stranded event, acknowledged to Slack and delivered to nobody.
    handled_at         timestamptz,
    failure_reason     text,
    failed_at          timestamptz,
    CONSTRAINT messaging_event_receipts_pkey PRIMARY KEY (tenant_id, platform, external_event_id),
    CONSTRAINT failure_is_whole CHECK ((failure_reason IS NULL) = (failed_at IS NULL))
);

-- "Expired receipts of tenant T": the prune in each completion.
CREATE INDEX messaging_event_receipts_expiry ON messaging_event_receipts (tenant_id, claimed_at);
-- "Claimed, never handled": stranded and failed listings stay cheap as the table grows.
CREATE INDEX messaging_event_receipts_unhandled ON messaging_event_receipts (claimed_at)
    WHERE handled_at IS NULL;

ALTER TABLE messaging_event_receipts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_event_receipts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON messaging_event_receipts TO doorman_app;

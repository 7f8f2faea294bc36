CREATE INDEX CONCURRENTLY IF NOT EXISTS messaging_event_receipts_unhandled ON messaging_event_receipts USING btree (claimed_at) WHERE (handled_at IS NULL);
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_payloads_expiry;
CREATE INDEX CONCURRENTLY messaging_event_payloads_expiry ON messaging_event_payloads USING btree (tenant_id, claimed_at);
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_expiry;
CREATE INDEX CONCURRENTLY messaging_event_receipts_expiry ON messaging_event_receipts USING btree (tenant_id, claimed_at);
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_swept;
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_failed;

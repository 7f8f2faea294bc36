-- The receipts' and kept payloads' indexes for decision 18, built and dropped CONCURRENTLY so a
-- serving Doorman keeps claiming while they are (outside a transaction: metadata.toml). Each
-- index is dropped first if a failed run left it half built (an invalid index), so the
-- migration can simply be run again.
--
-- Failed receipts: a completion does not change failure_reason, so it stays a heap-only update.
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_failed;
CREATE INDEX CONCURRENTLY messaging_event_receipts_failed ON messaging_event_receipts (tenant_id, failed_at)
    WHERE failure_reason IS NOT NULL;
-- Receipts a sweep found without an outcome (the stranded are among them).
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_swept;
CREATE INDEX CONCURRENTLY messaging_event_receipts_swept ON messaging_event_receipts (tenant_id, claimed_at)
    WHERE swept_at IS NOT NULL;
-- Expiry indexes only a query constraining claimed_at can use (never a look-up by key), then
-- the ones they replace.
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_expiry_by_time;
CREATE INDEX CONCURRENTLY messaging_event_receipts_expiry_by_time ON messaging_event_receipts (tenant_id, claimed_at)
    WHERE claimed_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_expiry;
ALTER INDEX messaging_event_receipts_expiry_by_time RENAME TO messaging_event_receipts_expiry;
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_payloads_expiry_by_time;
CREATE INDEX CONCURRENTLY messaging_event_payloads_expiry_by_time ON messaging_event_payloads (tenant_id, claimed_at)
    WHERE claimed_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_payloads_expiry;
ALTER INDEX messaging_event_payloads_expiry_by_time RENAME TO messaging_event_payloads_expiry;
-- Its every entry names a receipt that needs a completion to change an indexed column.
DROP INDEX CONCURRENTLY IF EXISTS messaging_event_receipts_unhandled;

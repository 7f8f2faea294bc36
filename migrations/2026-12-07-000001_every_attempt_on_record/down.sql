DROP FUNCTION IF EXISTS doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[], uuid[], timestamptz, bigint);
DROP FUNCTION IF EXISTS doorman_write_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], timestamptz[], smallint[], text[], text[], boolean[]);
DROP TABLE IF EXISTS messaging_event_attempts;
ALTER TABLE messaging_event_receipts DROP COLUMN IF EXISTS dispatched_at, DROP COLUMN IF EXISTS answer_status;

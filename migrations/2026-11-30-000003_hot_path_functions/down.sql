DROP FUNCTION IF EXISTS doorman_record_failure(uuid, text, text, text, timestamptz);
DROP FUNCTION IF EXISTS doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint);
DROP FUNCTION IF EXISTS doorman_claim_receipt(uuid, text, text, text, integer, timestamptz);
DROP FUNCTION IF EXISTS doorman_resolve(text, text, text);

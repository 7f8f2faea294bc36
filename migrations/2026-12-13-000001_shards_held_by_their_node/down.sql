DROP FUNCTION IF EXISTS doorman_hold_shards(bigint[]);

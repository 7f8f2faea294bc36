DROP FUNCTION IF EXISTS doorman_add_activity(uuid[], timestamptz[], bigint[], bigint[], bigint[], integer[], timestamptz);
DROP TABLE IF EXISTS messaging_activity_hours;

DROP TABLE IF EXISTS operational_events;

DROP TABLE IF EXISTS messaging_event_receipts;

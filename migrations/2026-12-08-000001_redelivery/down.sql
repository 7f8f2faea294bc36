DROP FUNCTION IF EXISTS doorman_redelivery_tenants();
ALTER TABLE messaging_event_receipts
    DROP CONSTRAINT IF EXISTS messaging_event_receipts_redeliveries_check,
    DROP COLUMN IF EXISTS redeliveries,
    DROP COLUMN IF EXISTS gave_up_at;
ALTER TABLE tenants DROP CONSTRAINT IF EXISTS tenants_redelivery_schedule_check, DROP COLUMN IF EXISTS redelivery_schedule;

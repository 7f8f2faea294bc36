ALTER TABLE tenants DROP COLUMN IF EXISTS read_only_portals_read_payloads;

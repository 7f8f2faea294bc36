ALTER TABLE tenants DROP COLUMN IF EXISTS read_only_portals_read_payloads;
COMMENT ON COLUMN admin_keys.read_payloads IS 'The key may read kept payloads (a key scoped to one tenant only if it is not read-only).';

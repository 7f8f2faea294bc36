-- Whether a tenant lets its read-only portal keys read its kept payloads (issue 42: "never to a
-- read-only portal key unless the tenant allows"). A key scoped to the tenant, read-only and
-- made with read_payloads, reads an event's payload only while this is on; every other key's
-- permission is its own, as before. Off for every tenant there is and every tenant made.
--
-- Expand only: a column with a default, so the previous release, which inserts tenants without
-- it and never reads it, keeps working beside this one. The table's grants to doorman_admin
-- (SELECT, INSERT, UPDATE) cover it. The serving processes never read it (it decides what an
-- admin process shows, not what is delivered): changing it fires the tenants' directory notice
-- as any update of the row does, and their directory keeps nothing of it.
ALTER TABLE tenants ADD COLUMN read_only_portals_read_payloads boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN tenants.read_only_portals_read_payloads IS 'Its read-only portal keys made with read_payloads may read its kept payloads.';
-- The keys' column said a read-only portal never reads them: now its tenant decides.
COMMENT ON COLUMN admin_keys.read_payloads IS 'The key may read kept payloads (a key scoped to one tenant its own tenant''s; a read-only one only while the tenant''s read_only_portals_read_payloads is on).';

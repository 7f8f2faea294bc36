-- An admin key's permission to read the payloads tenants keep (issue 42): an event's document
-- and page show its kept payload (what a customer wrote in Slack) only to a key given it. Off
-- for every key there is and every key made without asking for it.
--
-- Expand only: a column with a default, so the previous release, which inserts keys without
-- it and never reads it, keeps working beside this one (its keys read no payloads). The
-- table's grants to doorman_admin (SELECT, INSERT) cover the new column; none may update it:
-- a key's permission is fixed when it is made, as its scope is.
ALTER TABLE admin_keys ADD COLUMN read_payloads boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN admin_keys.read_payloads IS 'The key may read kept payloads (a key scoped to one tenant only if it is not read-only).';

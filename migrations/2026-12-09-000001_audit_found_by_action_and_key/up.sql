-- The audit trail filtered by action or by the key that acted (GET /admin/v1/audit?action=…,
-- ?key=…), newest first, a page at a time: each filter has an index ending in the trail's own
-- order, so a page reads its rows and no others however long the trail grows. A window alone
-- (since, until) is served by admin_audit_newest, one tenant's by admin_audit_tenant_newest.
-- Built CONCURRENTLY so changes keep being audited meanwhile (outside a transaction:
-- metadata.toml); each is dropped first if a failed run left it half built.
DROP INDEX CONCURRENTLY IF EXISTS admin_audit_action_newest;
CREATE INDEX CONCURRENTLY admin_audit_action_newest ON admin_audit (action, at DESC, id DESC);
-- Only keys' entries are found by key (the command line's actor_id is an OS user).
DROP INDEX CONCURRENTLY IF EXISTS admin_audit_key_newest;
CREATE INDEX CONCURRENTLY admin_audit_key_newest ON admin_audit (actor_id, at DESC, id DESC)
    WHERE actor_kind = 'key';

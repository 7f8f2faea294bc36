DROP INDEX CONCURRENTLY IF EXISTS admin_audit_key_newest;
DROP INDEX CONCURRENTLY IF EXISTS admin_audit_action_newest;

DROP FUNCTION IF EXISTS doorman_disable_failing_agents(timestamptz, timestamptz);
DELETE FROM admin_audit WHERE actor_kind = 'doorman';
ALTER TABLE admin_audit DROP CONSTRAINT admin_audit_actor_kind_check;
ALTER TABLE admin_audit ADD CONSTRAINT admin_audit_actor_kind_check CHECK (actor_kind = ANY (ARRAY['key'::text, 'cli'::text]));
REVOKE UPDATE (failing_since, failing_seen_at) ON agent_bridges FROM doorman_app;
ALTER TABLE agent_bridges DROP COLUMN IF EXISTS failing_since, DROP COLUMN IF EXISTS failing_seen_at, DROP COLUMN IF EXISTS disabled_at;

DROP TABLE admin_replay_job_events;
DROP TABLE admin_replay_jobs;
DROP POLICY admin_writes_entries_without_tenant ON admin_audit;
REVOKE INSERT, UPDATE ON admin_keys FROM doorman_admin;
ALTER TABLE admin_keys DROP COLUMN last_used_at;
ALTER TABLE admin_keys DROP COLUMN expires_at;
DROP TABLE deleted_tenants;
REVOKE SELECT, DELETE ON messaging_request_replays FROM doorman_admin;
REVOKE DELETE ON tenants, agent_bridges, messaging_event_receipts FROM doorman_admin;

DROP TRIGGER doorman_directory_notice ON tenants;
DROP TRIGGER doorman_directory_notice ON agent_bridges;
DROP TRIGGER doorman_directory_notice ON messaging_workspaces;
DROP FUNCTION doorman_notify_tenant_change();
DROP FUNCTION doorman_notify_workspace_change();
DROP FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint);
DROP FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]);

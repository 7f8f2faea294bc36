-- The doorman_app role is cluster-wide and may hold grants in other databases; it is left.
DROP FUNCTION IF EXISTS doorman_resolve_workspace(text, text, text);
DROP TABLE IF EXISTS agent_bridges;
DROP TABLE IF EXISTS messaging_workspaces;
DROP TABLE IF EXISTS tenants;

-- Tenants, the workspaces they own, and their agent bridges; row-level security on each;
-- the one role the server acts as; and the one SECURITY DEFINER function it needs.
--
-- Policies read the tenant from `app.tenant_id`, which the server sets per transaction with
-- set_config(..., true). After such a transaction the same session reads the setting as ''
-- (not NULL), so every policy goes through nullif(..., '') before the cast: without it, any
-- later query without a tenant fails with "invalid input syntax for type uuid".

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'doorman_app') THEN
        CREATE ROLE doorman_app NOLOGIN;
    END IF;
    -- The server logs in as the migrating user and switches to doorman_app on each pooled
    -- connection (SET ROLE), which needs membership. Superusers are members of every role.
    IF NOT pg_has_role(current_user, 'doorman_app', 'MEMBER') THEN
        EXECUTE format('GRANT doorman_app TO %I', current_user);
    END IF;
END
$$;

CREATE TABLE tenants (
    id          uuid        PRIMARY KEY,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A workspace belongs to exactly one tenant. Two forms: a team (team_id set, enterprise_id
-- optional) or an org-wide enterprise install (team_id null, enterprise_id set).
CREATE TABLE messaging_workspaces (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    platform       text        NOT NULL,
    team_id        text,
    enterprise_id  text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (team_id IS NOT NULL OR enterprise_id IS NOT NULL)
);
CREATE UNIQUE INDEX messaging_workspaces_team_key
    ON messaging_workspaces (platform, team_id) WHERE team_id IS NOT NULL;
CREATE UNIQUE INDEX messaging_workspaces_org_key
    ON messaging_workspaces (platform, enterprise_id) WHERE team_id IS NULL;
CREATE INDEX messaging_workspaces_tenant ON messaging_workspaces (tenant_id);

CREATE TABLE agent_bridges (
    tenant_id       uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    url             text        NOT NULL,
    signing_secret  text        NOT NULL,
    paused          boolean     NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
    USING (id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE messaging_workspaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_workspaces
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE agent_bridges ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agent_bridges
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- Full DML, so that row-level security (not a missing grant) is what keeps tenants apart.
GRANT SELECT, INSERT, UPDATE, DELETE ON tenants, messaging_workspaces, agent_bridges TO doorman_app;
-- /readyz checks, as the server, that every migration it embeds has been applied.
GRANT SELECT ON __diesel_schema_migrations TO doorman_app;

-- Workspace -> tenant runs before any tenant is known, so it cannot pass the policies above.
-- This is the one SECURITY DEFINER function (the test `only_allowlisted_functions_are_security_definer`
-- keeps it that way): it answers one id for one workspace and reveals nothing else. A team
-- link wins over an org-wide link of its enterprise.
CREATE FUNCTION doorman_resolve_workspace(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT tenant_id FROM (
        SELECT w.tenant_id, 1 AS rank FROM public.messaging_workspaces w
         WHERE w.platform = p_platform AND w.team_id = p_team_id
        UNION ALL
        SELECT w.tenant_id, 2 AS rank FROM public.messaging_workspaces w
         WHERE w.platform = p_platform AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id
    ) found
    ORDER BY rank
    LIMIT 1
$$;
REVOKE ALL ON FUNCTION doorman_resolve_workspace(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve_workspace(text, text, text) TO doorman_app;

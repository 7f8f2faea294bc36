-- The admin API's own role, its keys, its audit trail and its idempotency records.
--
-- `doorman admin serve` logs in as a member of doorman_admin: it may write the directory
-- (tenants, workspace links, agents, install links) and read receipts, each transaction acting
-- for one tenant under row-level security, as the server does. To replay an event it also
-- counts the replay and records its outcome on the receipt as the server would (without the
-- opportunistic prune: that is the server's and `receipts prune`'s). Nothing else: it claims
-- nothing, deletes no receipt, and cannot mint keys or read their secrets (only their hashes,
-- to authenticate). `doorman serve` keeps doorman_app, which still cannot write the directory.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'doorman_admin') THEN
        CREATE ROLE doorman_admin NOLOGIN;
    END IF;
    -- As for doorman_app: the migrating user may SET ROLE to it (superusers always may).
    IF NOT pg_has_role(current_user, 'doorman_admin', 'MEMBER') THEN
        EXECUTE format('GRANT doorman_admin TO %I', current_user);
    END IF;
END
$$;

-- Keys: only a SHA-256 of each key's secret is stored. The id is public (it is in the key's
-- text and in the audit trail). A key scoped to a tenant goes with it.
CREATE TABLE admin_keys (
    id           uuid        PRIMARY KEY,
    name         text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    tenant_id    uuid        REFERENCES tenants (id) ON DELETE CASCADE,
    read_only    boolean     NOT NULL,
    secret_hash  text        NOT NULL CHECK (length(secret_hash) = 64),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);

-- The audit trail: one row per change through either face. No foreign key: the trail outlives
-- what it describes. Never a secret: targets are ids and names.
CREATE TABLE admin_audit (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor_kind  text        NOT NULL CHECK (actor_kind IN ('key', 'cli')),
    actor_id    text        NOT NULL,
    actor_name  text        NOT NULL,
    action      text        NOT NULL,
    tenant_id   uuid,
    target      text,
    request_id  text        NOT NULL
);
CREATE INDEX admin_audit_newest ON admin_audit (at DESC, id DESC);
CREATE INDEX admin_audit_tenant_newest ON admin_audit (tenant_id, at DESC, id DESC);

-- Idempotent creations: a caller's key, what the request asked for (a hash) and the tenant
-- it created, remembered for 24 hours. The primary key arbitrates concurrent repeats.
CREATE TABLE admin_idempotency (
    scope        text        NOT NULL,
    key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint  text        NOT NULL,
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, key)
);

-- Tenants are listed oldest first, a page at a time.
CREATE INDEX tenants_oldest_first ON tenants (created_at, id);

-- Row-level security on the audit trail, as on every tenant-scoped table. A row without a
-- tenant (a key made or revoked) is visible to the owner only.
ALTER TABLE admin_audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON admin_audit
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- Listing every tenant (or every tenant's audit entries) crosses tenants: doorman_admin may,
-- but only in a transaction that says so with set_config('app.all_tenants', 'on', true). Every
-- other read of it names one tenant, as the server's do.
CREATE POLICY admin_lists_every_tenant ON tenants FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');
CREATE POLICY admin_lists_every_tenant ON admin_audit FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

GRANT SELECT, INSERT, UPDATE ON tenants, agent_bridges TO doorman_admin;
GRANT SELECT, INSERT, DELETE ON messaging_workspaces TO doorman_admin;
GRANT SELECT, INSERT ON messaging_install_links TO doorman_admin;
-- Installations: listed, and refreshed by a replay's dispatch; removed through
-- doorman_remove_installation, as an uninstall event does.
GRANT SELECT, UPDATE ON messaging_installations TO doorman_admin;
-- Receipts and kept payloads: read; a replay counts itself, holds the payload and records its
-- outcome (doorman_record_outcomes, which deletes a handled event's payload).
GRANT SELECT, UPDATE ON messaging_event_receipts TO doorman_admin;
GRANT SELECT, UPDATE, DELETE ON messaging_event_payloads TO doorman_admin;
GRANT SELECT ON admin_keys TO doorman_admin;
GRANT SELECT, INSERT ON admin_audit TO doorman_admin;
GRANT SELECT, INSERT, DELETE ON admin_idempotency TO doorman_admin;
GRANT SELECT ON __diesel_schema_migrations TO doorman_admin;

-- Removing a link also says whether an installation went with it (the admin API answers
-- 404 to an uninstall of a workspace that had none). Same rows touched as before.
DROP FUNCTION doorman_remove_installation(uuid, text, text, text, boolean);
CREATE FUNCTION doorman_remove_installation(p_tenant uuid, p_platform text, p_team_id text, p_enterprise_id text, p_org_wide boolean)
RETURNS TABLE (link_removed boolean, installation_removed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_installations integer;
    v_links integer;
BEGIN
    DELETE FROM public.messaging_installations AS i
     WHERE i.tenant_id = p_tenant AND i.platform = p_platform
       AND ((NOT p_org_wide AND i.team_id = p_team_id) OR (p_org_wide AND i.team_id IS NULL AND i.enterprise_id = p_enterprise_id));
    GET DIAGNOSTICS v_installations = ROW_COUNT;
    DELETE FROM public.messaging_workspaces AS w
     WHERE w.tenant_id = p_tenant AND w.platform = p_platform
       AND ((NOT p_org_wide AND w.team_id = p_team_id) OR (p_org_wide AND w.team_id IS NULL AND w.enterprise_id = p_enterprise_id));
    GET DIAGNOSTICS v_links = ROW_COUNT;
    RETURN QUERY SELECT v_links > 0, v_installations > 0;
END
$$;
REVOKE ALL ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) TO doorman_app;

GRANT EXECUTE ON FUNCTION doorman_resolve_workspace(text, text, text) TO doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text) TO doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) TO doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_remove_installation(uuid, text, text, text, boolean) TO doorman_admin;
GRANT EXECUTE ON FUNCTION doorman_secret_key_ids() TO doorman_admin;

-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id, set with doorman_set_local or SET LOCAL).
DROP POLICY IF EXISTS tenant_isolation ON public.agent_bridges;
CREATE POLICY tenant_isolation ON public.agent_bridges
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- The overview (agents failing or disabled now) reads across tenants, as doorman_admin, in a
-- transaction that says so.
DROP POLICY IF EXISTS admin_lists_every_tenant ON public.agent_bridges;
CREATE POLICY admin_lists_every_tenant ON public.agent_bridges FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

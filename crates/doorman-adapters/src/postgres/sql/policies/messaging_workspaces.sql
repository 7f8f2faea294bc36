-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id, set with doorman_set_local or SET LOCAL).
DROP POLICY IF EXISTS tenant_isolation ON public.messaging_workspaces;
CREATE POLICY tenant_isolation ON public.messaging_workspaces
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- Listing every tenant crosses tenants: doorman_admin may, but only in a transaction that says
-- so with set_config('app.all_tenants', 'on', true). Every other read names one tenant.
DROP POLICY IF EXISTS admin_lists_every_tenant ON public.messaging_workspaces;
CREATE POLICY admin_lists_every_tenant ON public.messaging_workspaces FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

-- Row-level security on the audit trail, as on every tenant-scoped table. A row without a
-- tenant (a key made or revoked) is visible to the owner only.
DROP POLICY IF EXISTS tenant_isolation ON public.admin_audit;
CREATE POLICY tenant_isolation ON public.admin_audit
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- Listing every tenant crosses tenants: doorman_admin may, but only in a transaction that says
-- so with set_config('app.all_tenants', 'on', true). Every other read names one tenant.
DROP POLICY IF EXISTS admin_lists_every_tenant ON public.admin_audit;
CREATE POLICY admin_lists_every_tenant ON public.admin_audit FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');
-- The admin role writes the entries of what concerns no tenant (keys made or revoked), and
-- may not read them back.
DROP POLICY IF EXISTS admin_writes_entries_without_tenant ON public.admin_audit;
CREATE POLICY admin_writes_entries_without_tenant ON public.admin_audit FOR INSERT TO doorman_admin
    WITH CHECK (tenant_id IS NULL);

-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id), or, for a serving process's flush, one of its tenants (app.tenant_ids, a
-- list set by doorman_add_activity, read once per statement).
DROP POLICY IF EXISTS tenant_isolation ON public.messaging_activity_hours;
CREATE POLICY tenant_isolation ON public.messaging_activity_hours
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))));
-- The overview (the tenants failing most) reads across tenants, as doorman_admin, in a
-- transaction that says so.
DROP POLICY IF EXISTS admin_lists_every_tenant ON public.messaging_activity_hours;
CREATE POLICY admin_lists_every_tenant ON public.messaging_activity_hours FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

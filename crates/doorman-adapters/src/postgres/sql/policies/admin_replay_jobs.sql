-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id, set with doorman_set_local or SET LOCAL).
DROP POLICY IF EXISTS tenant_isolation ON public.admin_replay_jobs;
CREATE POLICY tenant_isolation ON public.admin_replay_jobs
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- A process looking for a replay job to run reads across tenants (a transaction that says so); it
-- then takes the job acting for its tenant.
DROP POLICY IF EXISTS admin_lists_every_tenant ON public.admin_replay_jobs;
CREATE POLICY admin_lists_every_tenant ON public.admin_replay_jobs FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

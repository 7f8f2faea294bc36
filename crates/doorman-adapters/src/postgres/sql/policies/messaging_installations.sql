-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id, set with doorman_set_local or SET LOCAL).
DROP POLICY IF EXISTS tenant_isolation ON public.messaging_installations;
CREATE POLICY tenant_isolation ON public.messaging_installations
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

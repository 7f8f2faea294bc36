-- Row-level security: a row is seen and written only in a transaction that names its tenant
-- (app.tenant_id), or, for the hot path's batches, one of its tenants (app.tenant_ids, a list
-- set by the batch functions). The list is read once per statement (an uncorrelated
-- `ARRAY(SELECT …)` is an InitPlan), not parsed again for every row.
DROP POLICY IF EXISTS tenant_isolation ON public.messaging_event_attempts;
CREATE POLICY tenant_isolation ON public.messaging_event_attempts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (ARRAY(SELECT unnest(nullif(current_setting('app.tenant_ids', true), '')::uuid[]))));

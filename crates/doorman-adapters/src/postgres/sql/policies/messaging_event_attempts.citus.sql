-- Why Citus has its own form (ADR 22, ADR 23): Citus refuses a subquery in a distributed table's
-- policy, so the tenant list is cast where it is compared, once per row checked. One
-- PostgreSQL keeps the form that reads it once per statement (migration 2026-12-04-000001: the
-- per-row form cost it ~20% on a batch of one tenant's outcomes). Applied before the table is
-- distributed (postgres/citus.sql), which a subquery in its policy would stop.
DROP POLICY IF EXISTS tenant_isolation ON public.messaging_event_attempts;
CREATE POLICY tenant_isolation ON public.messaging_event_attempts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]))
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
            OR tenant_id = ANY (nullif(current_setting('app.tenant_ids', true), '')::uuid[]));

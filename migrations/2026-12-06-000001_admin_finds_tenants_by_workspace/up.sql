-- The console's tenant search (issue 38) finds a tenant by a Slack team or enterprise id of one
-- of its workspaces. Listing tenants crosses tenants, so doorman_admin reads every tenant's
-- workspace links in a transaction that says so (app.all_tenants = on), as it reads
-- `tenants` there; every other read of them names one tenant. Expand only: a new policy.
CREATE POLICY admin_lists_every_tenant ON messaging_workspaces FOR SELECT TO doorman_admin
    USING (current_setting('app.all_tenants', true) = 'on');

-- Directory notices (ADR 11): every change to who owns a workspace, or to a tenant, its agent or
-- its installations, is announced on the channel doorman_directory when its transaction
-- commits, naming what it changed (functions/doorman_notify_*.sql), so each process drops
-- exactly that from its in-memory directory. Inserting a tenant announces nothing: no process
-- has it cached yet.
CREATE OR REPLACE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON public.messaging_workspaces
    FOR EACH ROW EXECUTE FUNCTION public.doorman_notify_workspace_change();
CREATE OR REPLACE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON public.agent_bridges
    FOR EACH ROW EXECUTE FUNCTION public.doorman_notify_tenant_change();
CREATE OR REPLACE TRIGGER doorman_directory_notice AFTER UPDATE OR DELETE ON public.tenants
    FOR EACH ROW EXECUTE FUNCTION public.doorman_notify_tenant_change();
CREATE OR REPLACE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON public.messaging_installations
    FOR EACH ROW EXECUTE FUNCTION public.doorman_notify_tenant_change();

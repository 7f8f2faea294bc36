-- Group commit: claims, completions and failures of many deliveries in one transaction, and
-- notices of directory changes so every process can serve the directory from memory.
--
-- The batch functions take one array per column (element i of each array is request i).
-- Each goes tenant by tenant: set_config('app.tenant_id', ..., true), then one multi-row
-- statement for that tenant's rows, so row-level security still applies row by row.
--
-- Two batches in flight at once may hold the same keys. Each touches its rows in one global
-- order (tenant, platform, event id), so one waits for the other's commit (milliseconds) and
-- they never deadlock.

-- Claims: inserts every row it can; returns the keys it inserted (Claimed). A key that was
-- already there is not returned (Duplicate). The caller sends each key at most once.
CREATE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_event_types text[],
    p_attempts integer[], p_claimed_at timestamptz[]
) RETURNS TABLE (claimed_tenant uuid, claimed_platform text, claimed_event_id text)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tenant uuid;
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, event_type, delivery_attempt, claimed_at)
                SELECT u.tenant, u.platform, u.event_id, u.event_type, u.attempt, u.claimed_at
                  FROM unnest(p_tenants, p_platforms, p_event_ids, p_event_types, p_attempts, p_claimed_at)
                       AS u(tenant, platform, event_id, event_type, attempt, claimed_at)
                 WHERE u.tenant = v_tenant
                 ORDER BY u.platform, u.event_id
                ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                RETURNING r.tenant_id, r.platform, r.external_event_id
            )
            SELECT * FROM inserted;
    END LOOP;
END
$$;

-- Outcomes: completions (p_handled_at[i] set) and failures (p_failure_reasons[i] set) of
-- claimed receipts, one UPDATE per tenant for both; neither touches a receipt already
-- handled. Each tenant in p_prune_tenants (those with a completion in the batch) then prunes
-- its expired receipts once (decision 8). Returns, per pruning tenant, how many were pruned.
-- A receipt has one outcome, written once, so two batches never hold the same row.
CREATE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tenant uuid;
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = u.handled_at,
               failure_reason = CASE WHEN u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
         WHERE u.tenant = v_tenant
           AND r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
           AND r.handled_at IS NULL;
        IF v_tenant = ANY (p_prune_tenants) THEN
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]) TO doorman_app;
GRANT EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) TO doorman_app;

-- Directory notices: every change to who owns a workspace, or to a tenant's agent, is
-- announced on the channel doorman_directory when its transaction commits, naming what it
-- changed, so each process drops exactly that from its in-memory directory.
--   workspace:<platform>:<team id or empty>:<enterprise id or empty>
--   tenant:<tenant id>
CREATE FUNCTION doorman_notify_workspace_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('doorman_directory', format('workspace:%s:%s:%s',
            OLD.platform, coalesce(OLD.team_id, ''), coalesce(OLD.enterprise_id, '')));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('doorman_directory', format('workspace:%s:%s:%s',
            NEW.platform, coalesce(NEW.team_id, ''), coalesce(NEW.enterprise_id, '')));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION doorman_notify_tenant_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- agent_bridges rows carry tenant_id; tenants rows carry id.
    IF TG_TABLE_NAME = 'tenants' THEN
        PERFORM pg_notify('doorman_directory', 'tenant:' || coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('doorman_directory', 'tenant:' || coalesce(NEW.tenant_id, OLD.tenant_id)::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON messaging_workspaces
    FOR EACH ROW EXECUTE FUNCTION doorman_notify_workspace_change();
CREATE TRIGGER doorman_directory_notice AFTER INSERT OR UPDATE OR DELETE ON agent_bridges
    FOR EACH ROW EXECUTE FUNCTION doorman_notify_tenant_change();
CREATE TRIGGER doorman_directory_notice AFTER UPDATE OR DELETE ON tenants
    FOR EACH ROW EXECUTE FUNCTION doorman_notify_tenant_change();

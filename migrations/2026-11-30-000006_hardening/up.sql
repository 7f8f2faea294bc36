-- Hardening: least privilege for the server's role, replay records for unnumbered requests,
-- and hot-path functions that pin their search_path and give back the caller's tenant.

-- 1. The server never writes the directory: operator commands (as the owner) do.
REVOKE INSERT, UPDATE, DELETE ON tenants, messaging_workspaces, agent_bridges FROM doorman_app;

-- The per-event functions of migration 000003 that group commit replaced.
DROP FUNCTION doorman_claim_receipt(uuid, text, text, text, integer, timestamptz);
DROP FUNCTION doorman_complete_receipt(uuid, text, text, timestamptz, timestamptz, bigint);
DROP FUNCTION doorman_record_failure(uuid, text, text, text, timestamptz);

-- 2. Replays: each accepted unnumbered (never re-sent) request's signature, kept until the
-- signature would be refused as stale anyway. A second arrival is a replay.
CREATE TABLE messaging_request_replays (
    tenant_id   uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    signature   text        NOT NULL CHECK (length(signature) BETWEEN 1 AND 255),
    expires_at  timestamptz NOT NULL,
    CONSTRAINT messaging_request_replays_pkey PRIMARY KEY (tenant_id, signature)
);
CREATE INDEX messaging_request_replays_expiry ON messaging_request_replays (tenant_id, expires_at);
ALTER TABLE messaging_request_replays ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_request_replays
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, DELETE ON messaging_request_replays TO doorman_app;

-- 3. The hot paths again, each with a pinned search_path (a caller cannot shadow what they
-- read) and handing back the caller's app.tenant_id before it returns.

CREATE OR REPLACE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid := public.doorman_resolve_workspace(p_platform, p_team_id, p_enterprise_id);
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    IF v_tenant IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('app.tenant_id', v_tenant::text, true);
    RETURN QUERY
        SELECT v_tenant, b.url, b.signing_secret, b.paused
          FROM (SELECT 1) AS one
          LEFT JOIN public.agent_bridges AS b ON b.tenant_id = v_tenant;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_event_types text[],
    p_attempts integer[], p_claimed_at timestamptz[]
) RETURNS TABLE (claimed_tenant uuid, claimed_platform text, claimed_event_id text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
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
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

-- Records of unnumbered requests, in groups like claims: returns the ones it inserted.
-- An expired record of the same signature (a replay after its window) is replaced.
CREATE FUNCTION doorman_claim_requests(p_tenants uuid[], p_signatures text[], p_expires_at timestamptz[])
RETURNS TABLE (claimed_tenant uuid, claimed_signature text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        DELETE FROM public.messaging_request_replays AS r
         USING unnest(p_tenants, p_signatures) AS u(tenant, signature)
         WHERE u.tenant = v_tenant AND r.tenant_id = u.tenant AND r.signature = u.signature
           AND r.expires_at < now();
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at)
                SELECT u.tenant, u.signature, u.expires_at
                  FROM unnest(p_tenants, p_signatures, p_expires_at) AS u(tenant, signature, expires_at)
                 WHERE u.tenant = v_tenant
                 ORDER BY u.signature
                ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING
                RETURNING r.tenant_id, r.signature
            )
            SELECT * FROM inserted;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
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
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

-- The one bounded prune, now also of the tenant's expired replay records (bounded the same
-- way). Counts receipts only.
CREATE OR REPLACE FUNCTION doorman_prune_expired_receipts(p_tenant uuid, p_expired_before timestamptz, p_limit bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pruned bigint := 0;
BEGIN
    IF EXISTS (SELECT FROM public.messaging_event_receipts AS e
                WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before) THEN
        DELETE FROM public.messaging_event_receipts AS r
         WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
            SELECT e.tenant_id, e.platform, e.external_event_id
              FROM public.messaging_event_receipts AS e
             WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
        GET DIAGNOSTICS v_pruned = ROW_COUNT;
    END IF;
    IF EXISTS (SELECT FROM public.messaging_request_replays AS e
                WHERE e.tenant_id = p_tenant AND e.expires_at < now()) THEN
        DELETE FROM public.messaging_request_replays AS r
         WHERE (r.tenant_id, r.signature) IN (
            SELECT e.tenant_id, e.signature FROM public.messaging_request_replays AS e
             WHERE e.tenant_id = p_tenant AND e.expires_at < now()
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN v_pruned;
END
$$;

REVOKE ALL ON FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) TO doorman_app;

-- 4. Which encryption keys the stored secrets are sealed with (an id per value, '' for a value
-- stored before encryption), so a starting server can refuse to run without one of them. The
-- server cannot read other tenants' rows, hence SECURITY DEFINER; it returns key ids and
-- counts, never a secret.
CREATE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN b.signing_secret LIKE 'v1:%:%' THEN split_part(b.signing_secret, ':', 2) ELSE '' END,
           count(*)
      FROM public.agent_bridges AS b
     GROUP BY 1
$$;
REVOKE ALL ON FUNCTION doorman_secret_key_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_secret_key_ids() TO doorman_app;

-- Accounting and replay: per-tenant opt-in payload retention, replays counted on the receipt,
-- and the counts the server's stranded/failed gauges read.

-- 1. Whether a tenant keeps the payloads of its claimed events for replay (off by default).
-- The tenants trigger already tells every process's directory when it changes.
ALTER TABLE tenants ADD COLUMN retain_payloads boolean NOT NULL DEFAULT false;

-- How many times an operator replayed the event (a live dispatch is not counted here: the
-- agent has had it 1 + replays times once it was handled or failed).
ALTER TABLE messaging_event_receipts ADD COLUMN replays integer NOT NULL DEFAULT 0 CHECK (replays >= 0);

-- 2. The kept payloads: sealed (the keyring of secrets at rest), one per claimed event of a
-- retaining tenant, deleted when the event is handled or its receipt pruned. A replay holds
-- the row until `leased_until`, so two replays of one event never overlap.
CREATE TABLE messaging_event_payloads (
    tenant_id          uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    platform           text        NOT NULL,
    external_event_id  text        NOT NULL,
    claimed_at         timestamptz NOT NULL,
    payload            text        NOT NULL,
    leased_until       timestamptz,
    CONSTRAINT messaging_event_payloads_pkey PRIMARY KEY (tenant_id, platform, external_event_id)
);
CREATE INDEX messaging_event_payloads_expiry ON messaging_event_payloads (tenant_id, claimed_at);
ALTER TABLE messaging_event_payloads ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messaging_event_payloads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON messaging_event_payloads TO doorman_app;

-- 3. Resolve also says whether the tenant keeps payloads.
DROP FUNCTION doorman_resolve(text, text, text);
CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (
    tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean,
    install_team_id text, install_enterprise_id text, install_bot_user_id text,
    install_bot_token text, install_scopes text, install_expires_at timestamptz,
    install_refreshable boolean, retain_payloads boolean
)
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
        SELECT v_tenant, b.url, b.signing_secret, b.paused,
               i.team_id, i.enterprise_id, i.bot_user_id, i.bot_token, i.scopes,
               i.token_expires_at, i.refresh_token IS NOT NULL,
               coalesce(t.retain_payloads, false)
          FROM (SELECT 1) AS one
          LEFT JOIN public.tenants AS t ON t.id = v_tenant
          LEFT JOIN public.agent_bridges AS b ON b.tenant_id = v_tenant
          LEFT JOIN LATERAL (
              SELECT * FROM public.messaging_installations AS x
               WHERE x.tenant_id = v_tenant AND x.platform = p_platform
                 AND (x.team_id = p_team_id OR (x.team_id IS NULL AND x.enterprise_id = p_enterprise_id))
               ORDER BY x.team_id IS NULL
               LIMIT 1
          ) AS i ON true;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;
REVOKE ALL ON FUNCTION doorman_resolve(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_resolve(text, text, text) TO doorman_app;

-- 4. Claims keep the payload of each claimed (not duplicate) event that carries one, in the
-- same statement as the claim: an acknowledged event of a retaining tenant always has it.
DROP FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]);
CREATE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_event_types text[],
    p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (claimed_tenant uuid, claimed_platform text, claimed_event_id text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_keeps boolean := EXISTS (SELECT FROM unnest(p_payloads) AS p WHERE p IS NOT NULL);
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        IF NOT v_keeps THEN
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
        ELSE
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
                    RETURNING r.tenant_id, r.platform, r.external_event_id, r.claimed_at
                ), kept AS (
                    INSERT INTO public.messaging_event_payloads
                        (tenant_id, platform, external_event_id, claimed_at, payload)
                    SELECT i.tenant_id, i.platform, i.external_event_id, i.claimed_at, u.payload
                      FROM inserted AS i
                      JOIN unnest(p_tenants, p_platforms, p_event_ids, p_payloads)
                           AS u(tenant, platform, event_id, payload)
                        ON u.tenant = i.tenant_id AND u.platform = i.platform AND u.event_id = i.external_event_id
                     WHERE u.payload IS NOT NULL
                )
                SELECT i.tenant_id, i.platform, i.external_event_id FROM inserted AS i;
        END IF;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;
REVOKE ALL ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]) TO doorman_app;

-- 5. Outcomes: a handled event's payload is deleted with the completion; a failure ends any
-- replay's hold on it. Tenants that keep no payloads pay one index probe.
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
        IF EXISTS (SELECT FROM public.messaging_event_payloads AS p WHERE p.tenant_id = v_tenant) THEN
            DELETE FROM public.messaging_event_payloads AS p
             USING unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
             WHERE u.tenant = v_tenant AND u.handled_at IS NOT NULL
               AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
            UPDATE public.messaging_event_payloads AS p
               SET leased_until = NULL
              FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
             WHERE u.tenant = v_tenant AND u.handled_at IS NULL AND p.leased_until IS NOT NULL
               AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
        END IF;
        IF v_tenant = ANY (p_prune_tenants) THEN
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END IF;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

-- 6. The bounded prune also deletes the kept payloads of the receipts it expires.
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
    IF EXISTS (SELECT FROM public.messaging_event_payloads AS e
                WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before) THEN
        DELETE FROM public.messaging_event_payloads AS r
         WHERE (r.tenant_id, r.platform, r.external_event_id) IN (
            SELECT e.tenant_id, e.platform, e.external_event_id
              FROM public.messaging_event_payloads AS e
             WHERE e.tenant_id = p_tenant AND e.claimed_at < p_expired_before
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED);
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

-- 7. Every tenant's stranded and recently failed receipts, for the server's gauges. The server
-- cannot read across tenants, hence SECURITY DEFINER; it returns two counts, nothing else. It
-- reads only the partial index of unhandled receipts (see docs/operations.md for the plan).
CREATE FUNCTION doorman_receipt_counts(p_stranded_before timestamptz, p_failed_since timestamptz)
RETURNS TABLE (stranded bigint, failed_recent bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FILTER (WHERE r.failure_reason IS NULL AND r.claimed_at < p_stranded_before),
           count(*) FILTER (WHERE r.failed_at >= p_failed_since)
      FROM public.messaging_event_receipts AS r
     WHERE r.handled_at IS NULL
$$;
REVOKE ALL ON FUNCTION doorman_receipt_counts(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_receipt_counts(timestamptz, timestamptz) TO doorman_app;

-- 8. Kept payloads are sealed too: the start-up key check counts them.
CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s.sealed LIKE 'v1:%:%' THEN split_part(s.sealed, ':', 2) ELSE '' END, count(*)
      FROM (SELECT b.signing_secret AS sealed FROM public.agent_bridges AS b
            UNION ALL SELECT i.bot_token FROM public.messaging_installations AS i WHERE i.bot_token IS NOT NULL
            UNION ALL SELECT i.refresh_token FROM public.messaging_installations AS i WHERE i.refresh_token IS NOT NULL
            UNION ALL SELECT p.payload FROM public.messaging_event_payloads AS p) AS s
     GROUP BY 1
$$;

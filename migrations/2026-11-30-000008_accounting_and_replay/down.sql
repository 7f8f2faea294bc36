-- Back to the installations migration's functions; kept payloads and replay counts are dropped.
CREATE OR REPLACE FUNCTION doorman_secret_key_ids()
RETURNS TABLE (key_id text, secrets bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN v LIKE 'v1:%:%' THEN split_part(v, ':', 2) ELSE '' END, count(*)
      FROM (SELECT b.signing_secret AS v FROM public.agent_bridges AS b
            UNION ALL SELECT i.bot_token FROM public.messaging_installations AS i WHERE i.bot_token IS NOT NULL
            UNION ALL SELECT i.refresh_token FROM public.messaging_installations AS i WHERE i.refresh_token IS NOT NULL) AS stored
     GROUP BY 1
$$;

DROP FUNCTION doorman_receipt_counts(timestamptz, timestamptz);

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

DROP FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[], text[]);
CREATE FUNCTION doorman_claim_receipts(
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
REVOKE ALL ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_claim_receipts(uuid[], text[], text[], text[], integer[], timestamptz[]) TO doorman_app;

DROP FUNCTION doorman_resolve(text, text, text);
CREATE FUNCTION doorman_resolve(p_platform text, p_team_id text, p_enterprise_id text)
RETURNS TABLE (
    tenant_id uuid, agent_url text, agent_secret text, agent_paused boolean,
    install_team_id text, install_enterprise_id text, install_bot_user_id text,
    install_bot_token text, install_scopes text, install_expires_at timestamptz,
    install_refreshable boolean
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
               i.token_expires_at, i.refresh_token IS NOT NULL
          FROM (SELECT 1) AS one
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

DROP TABLE messaging_event_payloads;
ALTER TABLE messaging_event_receipts DROP COLUMN replays;
ALTER TABLE tenants DROP COLUMN retain_payloads;

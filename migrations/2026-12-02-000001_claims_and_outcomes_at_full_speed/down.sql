-- Back to the schema of 2026-12-01-000004: the partial index of unhandled receipts, foreign
-- keys to tenants, and the batch functions as they were.
CREATE OR REPLACE FUNCTION public.doorman_claim_receipts(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[], p_event_types text[], p_attempts integer[], p_claimed_at timestamp with time zone[], p_payloads text[]) RETURNS TABLE(held_by uuid)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    IF NOT EXISTS (SELECT FROM unnest(p_payloads) AS p WHERE p IS NOT NULL) THEN
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at
                  FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                       AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                 ORDER BY u.tenant, u.platform, u.event_id
                ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                RETURNING r.claim_id
            )
            SELECT * FROM inserted;
    ELSE
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at
                  FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at)
                       AS u(tenant, platform, event_id, claim_id, event_type, attempt, claimed_at)
                 ORDER BY u.tenant, u.platform, u.event_id
                ON CONFLICT ON CONSTRAINT messaging_event_receipts_pkey DO NOTHING
                RETURNING r.tenant_id, r.platform, r.external_event_id, r.claimed_at, r.claim_id
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
            SELECT i.claim_id FROM inserted AS i;
    END IF;
    PERFORM set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION public.doorman_settle_receipts(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[], p_event_types text[], p_attempts integer[], p_claimed_at timestamp with time zone[], p_payloads text[]) RETURNS TABLE(held_by uuid)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
BEGIN
    PERFORM * FROM public.doorman_claim_receipts(
        p_tenants, p_platforms, p_event_ids, p_claim_ids, p_event_types, p_attempts, p_claimed_at, p_payloads);
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    RETURN QUERY
        SELECT r.claim_id
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_claim_ids) AS u(tenant, platform, event_id, claim_id)
          JOIN public.messaging_event_receipts AS r
            ON r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
         WHERE r.claim_id = u.claim_id;
    PERFORM set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION public.doorman_record_outcomes(p_tenants uuid[], p_platforms text[], p_event_ids text[], p_handled_at timestamp with time zone[], p_failure_reasons text[], p_failed_at timestamp with time zone[], p_prune_tenants uuid[], p_expired_before timestamp with time zone, p_prune_batch bigint) RETURNS TABLE(outcome_tenant uuid, pruned bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_callers text := current_setting('app.tenant_ids', true);
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    UPDATE public.messaging_event_receipts AS r
       SET handled_at = u.handled_at,
           failure_reason = CASE WHEN u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
           failed_at = CASE WHEN u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
      FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
           AS u(tenant, platform, event_id, handled_at, reason, failed_at)
     WHERE r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
       AND r.handled_at IS NULL;
    IF EXISTS (SELECT FROM public.messaging_event_payloads AS p WHERE p.tenant_id = ANY (p_tenants)) THEN
        DELETE FROM public.messaging_event_payloads AS p
         USING unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
         WHERE u.handled_at IS NOT NULL
           AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
        UPDATE public.messaging_event_payloads AS p
           SET leased_until = NULL
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at) AS u(tenant, platform, event_id, handled_at)
         WHERE u.handled_at IS NULL AND p.leased_until IS NOT NULL
           AND p.tenant_id = u.tenant AND p.platform = u.platform AND p.external_event_id = u.event_id;
    END IF;
    PERFORM set_config('app.tenant_ids', coalesce(v_callers, ''), true);
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_prune_tenants) AS t ORDER BY t LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        outcome_tenant := v_tenant;
        pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
        RETURN NEXT;
    END LOOP;
    PERFORM set_config('app.tenant_id', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION public.doorman_claim_requests(p_tenants uuid[], p_signatures text[], p_expires_at timestamp with time zone[]) RETURNS TABLE(claimed_tenant uuid, claimed_signature text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    DELETE FROM public.messaging_request_replays AS r
     USING unnest(p_tenants, p_signatures) AS u(tenant, signature)
     WHERE r.tenant_id = u.tenant AND r.signature = u.signature AND r.expires_at < now();
    RETURN QUERY
        WITH inserted AS (
            INSERT INTO public.messaging_request_replays AS r (tenant_id, signature, expires_at)
            SELECT u.tenant, u.signature, u.expires_at
              FROM unnest(p_tenants, p_signatures, p_expires_at) AS u(tenant, signature, expires_at)
             ORDER BY u.tenant, u.signature
            ON CONFLICT ON CONSTRAINT messaging_request_replays_pkey DO NOTHING
            RETURNING r.tenant_id, r.signature
        )
        SELECT * FROM inserted;
    PERFORM set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

ALTER FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_seqscan;
ALTER FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_bitmapscan;
ALTER FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_hashjoin;
ALTER FUNCTION doorman_claim_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_mergejoin;
ALTER FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_seqscan;
ALTER FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_bitmapscan;
ALTER FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_hashjoin;
ALTER FUNCTION doorman_settle_receipts(uuid[], text[], text[], uuid[], text[], integer[], timestamptz[], text[]) RESET enable_mergejoin;
ALTER FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) RESET enable_seqscan;
ALTER FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) RESET enable_bitmapscan;
ALTER FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) RESET enable_hashjoin;
ALTER FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint) RESET enable_mergejoin;
ALTER FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) RESET enable_seqscan;
ALTER FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) RESET enable_bitmapscan;
ALTER FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) RESET enable_hashjoin;
ALTER FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) RESET enable_mergejoin;
ALTER FUNCTION doorman_claim_requests(uuid[], text[], timestamptz[]) RESET plan_cache_mode;

CREATE OR REPLACE FUNCTION public.doorman_receipt_counts(p_stranded_before timestamp with time zone, p_failed_since timestamp with time zone) RETURNS TABLE(stranded bigint, failed_recent bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT count(*) FILTER (WHERE public.doorman_is_stranded(r.handled_at, r.failure_reason, r.claimed_at, p_stranded_before)),
           count(*) FILTER (WHERE r.failed_at >= p_failed_since)
      FROM public.messaging_event_receipts AS r
     WHERE r.handled_at IS NULL
$$;

DROP FUNCTION doorman_sweep_receipts(timestamptz);
DROP FUNCTION doorman_sweep_watermark();
DROP TABLE messaging_receipt_sweep;
ALTER TABLE messaging_event_receipts RESET (fillfactor);
ALTER TABLE messaging_event_receipts DROP COLUMN swept_at;

ALTER TABLE messaging_request_replays
    ADD CONSTRAINT messaging_request_replays_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
ALTER TABLE messaging_event_payloads
    ADD CONSTRAINT messaging_event_payloads_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
ALTER TABLE messaging_event_receipts
    ADD CONSTRAINT messaging_event_receipts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

-- Claims and outcomes at full speed (issue 24; docs/benchmarks.md, "the busy shape"; ADR 18).
--
-- 1. Plans that hold as the tables grow. The batch functions' statements run on plans
--    PL/pgSQL caches per connection, made knowing neither how many rows the arrays hold (an
--    array parameter is estimated at 10) nor, without statistics (autovacuum off, or a table
--    not analysed since it was small), how large the table has grown. Measured: the outcomes'
--    UPDATE planned as a hash join over a sequential scan, or as a probe of the expiry index
--    (every receipt of the tenant) per outcome, or as a bitmap of the partial index of
--    unhandled receipts, which keeps an entry for every receipt handled since the last vacuum:
--    each grows with the table. Inside these functions only, sequential scans, bitmaps, hash
--    and merge joins are off, so the plan left is a probe of an index per input row. Which
--    index: the expiry indexes (tenant_id, claimed_at) of receipts and kept payloads also
--    lead with tenant_id, and a plan made while the table was small cannot tell them from the
--    primary key. They become partial (`claimed_at IS NOT NULL`, true of every row): a query
--    can use one only if it constrains claimed_at (pruning, time ranges), never a look-up by
--    key. (The fingerprints' DELETE does constrain expires_at: that function plans each call
--    for the arrays it is given; commands are few.)
-- 2. Completions are heap-only updates. An UPDATE that changes no indexed column writes no
--    index entry (HOT). handled_at was in the predicate of the partial index of unhandled
--    receipts, so every completion wrote a new entry into every index of the table. That index
--    is gone. What it served is now:
--    - failed receipts: a partial index on (tenant_id, failed_at) where failure_reason is set.
--      A completion does not change failure_reason, so it stays a HOT update;
--    - stranded receipts: a sweep (doorman_sweep_receipts) marks the receipts claimed in the
--      window since its last run that have no outcome (swept_at), and a partial index holds the
--      marked ones. Whoever reads stranded receipts sweeps first (the gauges once a minute, the
--      operator's listings, replays of stranded events), so a reader misses none. The sweep's
--      watermark stays a minute behind now: a claim commits within seconds of its claimed_at,
--      and a claim inserted later than that (a settle after a lost connection) is marked as it
--      is inserted, if the sweep has already passed it.
--    Fill factor 70 leaves each page the room its completions need to stay on it.
-- 3. No foreign key from the receipts, kept payloads and request fingerprints to tenants. Each
--    was a trigger and a query per inserted row (a tenth of PostgreSQL's time per event), and
--    one deleted tenant's row failed the claims of every tenant in its batch. Claims carry the
--    tenant the directory resolved; removing a tenant removes these rows itself.
-- 4. Fewer statements per call: what PL/pgSQL can evaluate as an expression is one, and the
--    completion's work on kept payloads rides in the UPDATE's statement.

-- 3. Foreign keys.
ALTER TABLE messaging_event_receipts DROP CONSTRAINT messaging_event_receipts_tenant_id_fkey;
ALTER TABLE messaging_event_payloads DROP CONSTRAINT messaging_event_payloads_tenant_id_fkey;
ALTER TABLE messaging_request_replays DROP CONSTRAINT messaging_request_replays_tenant_id_fkey;

-- 2. Heap-only completions, failed and swept receipts.
ALTER TABLE messaging_event_receipts ADD COLUMN swept_at timestamptz;
ALTER TABLE messaging_event_receipts SET (fillfactor = 70);
-- Every receipt without an outcome now is marked, as a sweep would have (read through the
-- partial index of unhandled receipts, which the next migration drops).
UPDATE messaging_event_receipts SET swept_at = now() WHERE handled_at IS NULL;
-- The indexes change in the next migration, built without blocking writes.

-- How far the sweep has looked: every receipt claimed up to swept_before that had no outcome
-- when a sweep looked at it is marked. One row. Only the functions below touch it.
CREATE TABLE messaging_receipt_sweep (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    swept_before timestamptz NOT NULL
);
INSERT INTO messaging_receipt_sweep (swept_before)
    SELECT CASE WHEN EXISTS (SELECT FROM messaging_event_receipts) THEN now() - interval '1 minute'
                ELSE '-infinity' END;
REVOKE ALL ON messaging_receipt_sweep FROM PUBLIC;

-- The watermark, for a claim inserted behind it: waits for a sweep in progress (its row lock)
-- so the claim reads where that sweep stopped.
CREATE FUNCTION doorman_sweep_watermark() RETURNS timestamptz
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT s.swept_before FROM public.messaging_receipt_sweep AS s FOR SHARE $$;
REVOKE ALL ON FUNCTION doorman_sweep_watermark() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_sweep_watermark() TO doorman_app;

-- Marks every receipt claimed after the watermark and up to p_before (at most now) that has
-- no outcome; moves the watermark to p_before, but never closer to now than a minute. Returns
-- how many it marked. Across tenants, hence SECURITY DEFINER: it marks, and says a number.
CREATE FUNCTION doorman_sweep_receipts(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_from timestamptz;
    v_upto timestamptz := least(p_before, now());
    v_swept bigint;
BEGIN
    SELECT s.swept_before INTO v_from FROM public.messaging_receipt_sweep AS s FOR UPDATE;
    IF v_upto <= v_from THEN
        RETURN 0;
    END IF;
    UPDATE public.messaging_event_receipts AS r
       SET swept_at = now()
      FROM public.tenants AS t
     WHERE r.tenant_id = t.id AND r.claimed_at > v_from AND r.claimed_at <= v_upto
       AND r.handled_at IS NULL AND r.swept_at IS NULL;
    GET DIAGNOSTICS v_swept = ROW_COUNT;
    UPDATE public.messaging_receipt_sweep
       SET swept_before = greatest(v_from, least(v_upto, now() - interval '1 minute'));
    RETURN v_swept;
END
$$;
REVOKE ALL ON FUNCTION doorman_sweep_receipts(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION doorman_sweep_receipts(timestamptz) TO doorman_app, doorman_admin;

-- The gauges' two counts, after a sweep: stranded through the swept index, recently failed
-- through the failed one.
CREATE OR REPLACE FUNCTION doorman_receipt_counts(p_stranded_before timestamptz, p_failed_since timestamptz)
RETURNS TABLE (stranded bigint, failed_recent bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM public.doorman_sweep_receipts(p_stranded_before);
    RETURN QUERY SELECT
        (SELECT count(*) FROM public.messaging_event_receipts AS r
          WHERE r.swept_at IS NOT NULL
            AND public.doorman_is_stranded(r.handled_at, r.failure_reason, r.claimed_at, p_stranded_before)),
        (SELECT count(*) FROM public.messaging_event_receipts AS r
          WHERE r.failure_reason IS NOT NULL AND r.handled_at IS NULL AND r.failed_at >= p_failed_since);
END
$$;

-- 1, 2, 4. The batch functions.
CREATE OR REPLACE FUNCTION doorman_claim_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[],
    p_event_types text[], p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (held_by uuid)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    -- A receipt claimed more than half a minute ago (a settle) may be behind the sweep's
    -- watermark: it is marked as the sweep would have. The watermark is read only then.
    IF cardinality(array_remove(p_payloads, NULL)) = 0 THEN
        RETURN QUERY
            WITH inserted AS (
                INSERT INTO public.messaging_event_receipts AS r
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at, swept_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at,
                       CASE WHEN u.claimed_at < now() - interval '30 seconds'
                             AND u.claimed_at <= (SELECT public.doorman_sweep_watermark()) THEN now() END
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
                    (tenant_id, platform, external_event_id, claim_id, event_type, delivery_attempt, claimed_at, swept_at)
                SELECT u.tenant, u.platform, u.event_id, u.claim_id, u.event_type, u.attempt, u.claimed_at,
                       CASE WHEN u.claimed_at < now() - interval '30 seconds'
                             AND u.claimed_at <= (SELECT public.doorman_sweep_watermark()) THEN now() END
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
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

CREATE OR REPLACE FUNCTION doorman_settle_receipts(
    p_tenants uuid[], p_platforms text[], p_event_ids text[], p_claim_ids uuid[],
    p_event_types text[], p_attempts integer[], p_claimed_at timestamptz[], p_payloads text[]
) RETURNS TABLE (held_by uuid)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
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
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

-- One statement records the batch's outcomes and what they mean for kept payloads (a handled
-- event's is deleted, a failure ends a replay's hold on it). The UPDATE no longer says
-- `handled_at IS NULL`, which is what let it read the partial index: the rule is in its SET.
-- A completion sets handled_at once; a failure never touches a handled receipt; an outcome
-- sent again writes its row with the values it has. Pruning names one tenant at a time.
CREATE OR REPLACE FUNCTION doorman_record_outcomes(
    p_tenants uuid[], p_platforms text[], p_event_ids text[],
    p_handled_at timestamptz[], p_failure_reasons text[], p_failed_at timestamptz[],
    p_prune_tenants uuid[], p_expired_before timestamptz, p_prune_batch bigint
) RETURNS TABLE (outcome_tenant uuid, pruned bigint)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    v_tenant uuid;
    v_caller text := current_setting('app.tenant_id', true);
    v_callers text := current_setting('app.tenant_ids', true);
    v_ignored text;
BEGIN
    PERFORM set_config('app.tenant_ids', ARRAY(SELECT DISTINCT t FROM unnest(p_tenants) AS t)::text, true);
    WITH recorded AS (
        UPDATE public.messaging_event_receipts AS r
           SET handled_at = coalesce(r.handled_at, u.handled_at),
               failure_reason = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.reason ELSE r.failure_reason END,
               failed_at = CASE WHEN r.handled_at IS NULL AND u.handled_at IS NULL THEN u.failed_at ELSE r.failed_at END
          FROM unnest(p_tenants, p_platforms, p_event_ids, p_handled_at, p_failure_reasons, p_failed_at)
               AS u(tenant, platform, event_id, handled_at, reason, failed_at)
         WHERE r.tenant_id = u.tenant AND r.platform = u.platform AND r.external_event_id = u.event_id
        RETURNING r.tenant_id, r.platform, r.external_event_id, u.handled_at IS NOT NULL AS completed
    ), released AS (
        DELETE FROM public.messaging_event_payloads AS p
         USING recorded AS d
         WHERE d.completed
           AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id
    )
    UPDATE public.messaging_event_payloads AS p
       SET leased_until = NULL
      FROM recorded AS d
     WHERE NOT d.completed AND p.leased_until IS NOT NULL
       AND p.tenant_id = d.tenant_id AND p.platform = d.platform AND p.external_event_id = d.external_event_id;
    v_ignored := set_config('app.tenant_ids', coalesce(v_callers, ''), true);
    IF cardinality(p_prune_tenants) > 0 THEN
        FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_prune_tenants) AS t ORDER BY t LOOP
            v_ignored := set_config('app.tenant_id', v_tenant::text, true);
            outcome_tenant := v_tenant;
            pruned := public.doorman_prune_expired_receipts(v_tenant, p_expired_before, p_prune_batch);
            RETURN NEXT;
        END LOOP;
        v_ignored := set_config('app.tenant_id', coalesce(v_caller, ''), true);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION doorman_claim_requests(
    p_tenants uuid[], p_signatures text[], p_expires_at timestamptz[]
) RETURNS TABLE (claimed_tenant uuid, claimed_signature text)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    v_caller text := current_setting('app.tenant_ids', true);
    v_ignored text;
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
    v_ignored := set_config('app.tenant_ids', coalesce(v_caller, ''), true);
END
$$;

-- The operational webhook's outbox (issue 41): what the platform's operators are told — an
-- event whose redeliveries are spent, an agent disabled, a tenant's circuit opened or closed —
-- waits here until the deployment's one operational webhook takes it, retried on the standard
-- schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h) and then given up. A sender in every
-- serving process takes due rows with `FOR UPDATE SKIP LOCKED` and holds them
-- (`leased_until`), so two processes never send one at once; each row's id is its
-- `webhook-id` (`msg_<id>`) on every attempt.
--
-- Deployment-level, not tenant data: no row-level security. Every row goes to the same
-- receiver, the platform's operators, never to a tenant; it is written on no tenant's behalf
-- (a circuit, the redelivery runner across tenants) and read across tenants by the sender, so
-- a policy keyed on `app.tenant_id` would protect nothing and make the sender act for each
-- tenant in turn. It holds no customer content: a type, a tenant's id, Slack's event id and a
-- short reason, pruned a week after it was delivered or given up.
--
-- On Citus it is a plain table on the coordinator (not distributed: a handful of rows, read
-- across tenants).
--
-- Expand only: a new table.

CREATE TABLE operational_events (
    id uuid PRIMARY KEY,
    type text NOT NULL,
    tenant_id uuid NOT NULL,
    external_event_id text,
    occurred_at timestamptz NOT NULL,
    detail text,
    -- Attempts that ended (failed); the next one is due at `next_attempt_at`.
    attempts smallint NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- Held by a sender until then (an expired hold is none: a killed sender loses nothing).
    leased_until timestamptz,
    delivered_at timestamptz,
    gave_up_at timestamptz,
    -- The last attempt's failure, for people: a status, or why there was none.
    last_failure text,
    CONSTRAINT operational_events_type_check CHECK (
        type IN ('event.exhausted', 'agent.disabled', 'agent.circuit_opened', 'agent.circuit_closed')),
    CONSTRAINT operational_events_attempts_check CHECK (attempts >= 0)
);

-- What a sender looks for: due, neither delivered nor given up.
CREATE INDEX operational_events_due ON operational_events (next_attempt_at)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;

-- The serving process records, sends, marks and prunes.
GRANT SELECT, INSERT, UPDATE, DELETE ON operational_events TO doorman_app;

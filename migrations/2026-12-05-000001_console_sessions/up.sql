-- The operator console (issue 28): a browser holds a session, never a key. Expand only: two
-- new tables the previous release never reads.

-- A signed-in browser. Its cookie holds an opaque random value; only its SHA-256 is stored,
-- so a copy of this table signs nobody in. A session acts as the key it was opened with, and
-- ends at sign-out (ended_at), at its expiry, or when that key is revoked, expires or is
-- deleted (checked on every request by joining admin_keys; a deleted key takes its sessions).
CREATE TABLE console_sessions (
    id_hash     text        PRIMARY KEY CHECK (length(id_hash) = 64),
    key_id      uuid        NOT NULL REFERENCES admin_keys (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    ended_at    timestamptz
);
CREATE INDEX console_sessions_key ON console_sessions (key_id);
COMMENT ON TABLE console_sessions IS 'Operator console sessions: the SHA-256 of each cookie, never the cookie.';

-- A one-time sign-in link for a key scoped to one tenant (a customer's portal): spent by its
-- first use (used_at), refused after expires_at. Only the token's SHA-256 is stored.
CREATE TABLE console_sign_in_links (
    token_hash  text        PRIMARY KEY CHECK (length(token_hash) = 64),
    key_id      uuid        NOT NULL REFERENCES admin_keys (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX console_sign_in_links_key ON console_sign_in_links (key_id);
COMMENT ON TABLE console_sign_in_links IS 'One-time console sign-in links: the SHA-256 of each token, never the token.';

-- Sessions and links are read before any tenant is known (as admin_keys is): no row-level
-- security; doorman_admin opens, reads and ends them, and never deletes one.
GRANT SELECT, INSERT ON console_sessions, console_sign_in_links TO doorman_admin;
GRANT UPDATE (ended_at) ON console_sessions TO doorman_admin;
GRANT UPDATE (used_at) ON console_sign_in_links TO doorman_admin;

-- A token refresh leases the installation instead of holding a row lock across Slack's answer
-- (up to 10 s, on the pool that also carries outcome writes). Expand only: a nullable column
-- without a default is a catalog change (no rewrite, no scan), and the previous release never
-- reads it (it keeps refreshing under FOR UPDATE, which the lease's UPDATE also waits for).
ALTER TABLE messaging_installations ADD COLUMN refresh_leased_until timestamptz;
COMMENT ON COLUMN messaging_installations.refresh_leased_until IS
    'A process is asking Slack for fresh tokens until then; others wait for its answer rather than spend the refresh token a second time.';

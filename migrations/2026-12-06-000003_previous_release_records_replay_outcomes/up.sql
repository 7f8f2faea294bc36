-- Expand/contract has no exceptions (issue 38). 2026-12-02-000004 revoked EXECUTE on
-- doorman_record_outcomes from doorman_admin, so during a deploy the previous release's admin
-- processes and `receipts replay` (deploy/previous-release, 4bbe04e: they record a replay's
-- outcome through that function, as doorman_admin) dispatched a replay and failed to record
-- its outcome. Given back for one release; today's admin does not call it (it writes a
-- replay's outcome under its one tenant through doorman_write_outcomes).
--
-- It is the only privilege of doorman_app or doorman_admin that the previous release had and
-- today's schema had taken away (every function, table and column privilege of both roles
-- compared, and nothing it calls dropped). Remove it (REVOKE, in a new migration) once
-- deploy/previous-release names a release that includes 2026-12-02-000004; the rolling-deploy
-- test (`the_previous_release_replays_a_failed_event_…`) then no longer needs it.
GRANT EXECUTE ON FUNCTION doorman_record_outcomes(uuid[], text[], text[], timestamptz[], text[], timestamptz[], uuid[], timestamptz, bigint)
    TO doorman_admin;

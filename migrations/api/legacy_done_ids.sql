-- legacy_done_ids reports whether ledger_request_done still carries
-- request ids, as it did before this migration: off unless an
-- administrator turns it on for the deprecation release, for listeners
-- not yet moved to notify_channel(), knowing that every role that can
-- connect then sees every principal's ids:
--   ALTER DATABASE <db> SET execledger.legacy_done_ids = on;
-- It is read in the session that notifies (an executor's, for most
-- completions); a session that sets it itself changes only what its own
-- transactions send.

CREATE OR REPLACE FUNCTION ledger.legacy_done_ids() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce(current_setting('execledger.legacy_done_ids', true), '') IN ('on', 'true', '1')
$$;

REVOKE ALL ON FUNCTION ledger.legacy_done_ids() FROM PUBLIC;

-- depends: api/current_principal.sql
-- depends: api/done_channel.sql

-- notify_channel is the channel on which the caller's principal is told,
-- with the request id as payload, that one of its requests is final. NULL
-- for a login role that is not mapped to a principal.

CREATE OR REPLACE FUNCTION ledger.notify_channel() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT ledger.done_channel(ledger.current_principal())
$$;

REVOKE ALL ON FUNCTION ledger.notify_channel() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_admin;

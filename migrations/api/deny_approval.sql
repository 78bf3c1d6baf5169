-- depends: api/decide_approval.sql

-- deny_approval refuses a request that waits for approval: it ends denied
-- with error_kind approval_denied.

CREATE OR REPLACE FUNCTION ledger.deny_approval(request_id uuid, note text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, false, note, NULL);
END $$;

REVOKE ALL ON FUNCTION ledger.deny_approval(request_id uuid, note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.deny_approval(request_id uuid, note text) TO ledger_approver;

-- current_principal is the principal of the calling login role, or NULL.

CREATE OR REPLACE FUNCTION ledger.current_principal() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p.principal FROM ledger.principals p WHERE p.login_role = session_user
$$;

REVOKE ALL ON FUNCTION ledger.current_principal() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.current_principal() TO ledger_skill_admin;

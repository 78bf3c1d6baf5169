-- depends: api/current_principal.sql
-- depends: projections/apply_runs.sql

-- run_budget is a run's budget as the executor charges it: max_calls set
-- by ledger.set_run_budget (NULL: the executor's
-- executor.default_max_calls_per_run), the calls used and whether the run
-- has ended. A run with no event yet has used none. principal NULL means
-- the caller's; another principal's run only for ledger_auditor,
-- ledger_executor and ledger_admin (no row otherwise, as for a run that
-- is not the caller's to see).
CREATE OR REPLACE FUNCTION ledger.run_budget(run_id text, principal text DEFAULT NULL::text)
    RETURNS TABLE(max_calls integer, used integer, ended boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    SELECT r.max_calls, coalesce(r.used, 0), coalesce(r.ended_at IS NOT NULL, false)
    FROM (SELECT coalesce($2, ledger.current_principal()) AS principal) k
    LEFT JOIN ledger.runs r ON r.principal = k.principal AND r.run_id = $1
    WHERE $1 IS NOT NULL AND k.principal IS NOT NULL
      AND (k.principal IS NOT DISTINCT FROM ledger.current_principal()
           OR pg_has_role(session_user, 'ledger_auditor', 'MEMBER')
           OR pg_has_role(session_user, 'ledger_executor', 'MEMBER')
           OR pg_has_role(session_user, 'ledger_admin', 'MEMBER'))
$_$;

REVOKE ALL ON FUNCTION ledger.run_budget(run_id text, principal text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.run_budget(run_id text, principal text) TO ledger_submitter, ledger_approver, ledger_auditor, ledger_executor, ledger_admin;

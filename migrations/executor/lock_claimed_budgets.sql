-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) RETURNS TABLE(principal text, run_id text, max_calls integer, used integer, ended boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    -- Budgets are serialized by an advisory lock per run (set_run_budget,
    -- end_run and claims take it), not by a row: ledger.runs is a read
    -- model, and a run that has no event yet has no row.
    PERFORM pg_advisory_xact_lock(hashtextextended('run:' || k.principal || '/' || k.run_id, 0))
    FROM (SELECT DISTINCT s.principal, s.run_id
          FROM ledger.queue q
          JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
          JOIN ledger.request_status s ON s.id = q.id
          WHERE q.claimed_role = session_user AND s.run_id IS NOT NULL
          ORDER BY 1, 2) k;
    RETURN QUERY
    SELECT k.principal, k.run_id, coalesce(r.max_calls, default_max), coalesce(r.used, 0), r.ended_at IS NOT NULL
    FROM (SELECT DISTINCT s.principal, s.run_id
          FROM ledger.queue q
          JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
          JOIN ledger.request_status s ON s.id = q.id
          WHERE q.claimed_role = session_user AND s.run_id IS NOT NULL) k
    LEFT JOIN ledger.runs r ON r.principal = k.principal AND r.run_id = k.run_id
    ORDER BY k.principal, k.run_id;
END $$;

REVOKE ALL ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) TO ledger_executor;

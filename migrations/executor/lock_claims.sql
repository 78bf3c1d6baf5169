-- lock_claims locks the queue rows of the given claims the caller still
-- holds and returns their stream heads.
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(id uuid, stream_version bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.stream_version FROM ledger.queue q
    JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    WHERE q.claimed_role = session_user
    ORDER BY q.id
    FOR UPDATE OF q
$$;

REVOKE ALL ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) TO ledger_executor;

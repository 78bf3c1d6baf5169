-- heartbeat extends the leases of the caller's claims still held and
-- returns their cancellation flags.
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) RETURNS TABLE(id uuid, cancel_requested boolean)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    WITH held AS (
        SELECT q.id FROM ledger.queue q
        JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
        WHERE q.id = ANY(request_ids) AND q.claimed_role = session_user
        ORDER BY q.id
        FOR UPDATE OF q
    )
    UPDATE ledger.queue q SET lease_expires_at = clock_timestamp() + lease
    FROM held WHERE q.id = held.id
    RETURNING q.id, q.cancel_requested
$$;

REVOKE ALL ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) TO ledger_executor;

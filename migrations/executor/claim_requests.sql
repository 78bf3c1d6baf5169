-- claim_requests takes up to max_requests pending requests in claim order,
-- skipping rows other executors hold, marks them running under a new claim
-- with a lease, appends request.claimed (with the request's trace, 013) to
-- each unless record_claims is false, and returns what the executor needs
-- to authorize and run them. The caller's transaction continues with
-- authorization, so that a budget is consumed atomically with the claim.
-- An executor that writes the compact grammar (021) claims with
-- record_claims false: its request.decided, in the same transaction,
-- records the claim with the decision; a claim whose transaction commits
-- without it is not in the log, and the lease's expiry rescues it like any
-- other (lease.expired names the claim).
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean DEFAULT true) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, stream_version bigint, principal text, tool text, run_id text, input text, context text, context_bound text[], input_digest bytea, approved boolean, charged boolean, submitted_at timestamp with time zone, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    RETURN QUERY
    WITH picked AS (
        SELECT q.id FROM ledger.queue q
        WHERE q.state = 'pending' AND q.available_at <= clock_timestamp()
        ORDER BY q.priority DESC, q.available_at, q.id
        LIMIT max_requests
        FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE ledger.queue q
        SET state = 'running', claimed_by = executor, claimed_role = session_user, claim_id = gen_random_uuid(),
            attempt = q.attempt + 1, lease_expires_at = clock_timestamp() + lease,
            stream_version = q.stream_version + CASE WHEN record_claims THEN 1 ELSE 0 END, started_at = NULL
        FROM picked WHERE q.id = picked.id
        RETURNING q.*
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || c.id, c.stream_version, 'request.claimed',
               json_build_object('request_id', c.id, 'executor', executor, 'claim_id', c.claim_id,
                                 'attempt', c.attempt, 'lease_expires_at', c.lease_expires_at),
               CASE WHEN c.trace_id IS NULL
                   THEN json_build_object('actor', executor, 'login_role', session_user, 'correlation_id', c.id)
                   ELSE json_build_object('actor', executor, 'login_role', session_user, 'correlation_id', c.id,
                                          'trace_id', c.trace_id, 'span_id', c.trace_span_id) END
        FROM claimed c
        WHERE record_claims
    )
    SELECT c.id, c.claim_id, c.attempt, c.stream_version, r.principal, r.tool, r.run_id,
           (e.payload -> 'input')::text, (e.payload -> 'context')::text,
           ARRAY(SELECT json_array_elements_text(coalesce(e.payload -> 'context_bound', '[]'::json))), r.input_digest,
           c.approved_digest IS NOT DISTINCT FROM r.input_digest, c.charged, r.submitted_at, c.lease_expires_at
    FROM claimed c
    JOIN ledger.request_status r ON r.id = c.id
    -- A lateral probe of (stream, version = 1), not a join: a plan kept
    -- from an empty ledger joined by version = 1 alone, reading every
    -- request's tool.requested at each claim (TestHotPlansIgnoreStatistics).
    JOIN LATERAL (SELECT e.payload FROM ledger.events e WHERE e.stream = 'request:' || c.id AND e.version = 1 LIMIT 1) e ON true
    ORDER BY c.priority DESC, c.available_at, c.id;
END $$;

REVOKE ALL ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval, record_claims boolean) TO ledger_executor;

-- lock_expired_leases locks up to max_rows running requests whose lease
-- expired (skipping rows others hold) for the caller to rescue.
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.lock_expired_leases(max_rows integer) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, claimed_by text, stream_version bigint, started boolean, cancel_requested boolean, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.claim_id, q.attempt, q.claimed_by, q.stream_version, q.started_at IS NOT NULL, q.cancel_requested,
           r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'running' AND q.lease_expires_at < clock_timestamp()
    ORDER BY q.lease_expires_at
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;

REVOKE ALL ON FUNCTION ledger.lock_expired_leases(max_rows integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.lock_expired_leases(max_rows integer) TO ledger_executor;

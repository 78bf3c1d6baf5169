-- lock_expired_approvals locks up to max_rows requests whose wait for
-- approval expired.
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.lock_expired_approvals(max_rows integer) RETURNS TABLE(id uuid, stream_version bigint, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
    SELECT q.id, q.stream_version, r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp()
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;

REVOKE ALL ON FUNCTION ledger.lock_expired_approvals(max_rows integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.lock_expired_approvals(max_rows integer) TO ledger_executor;

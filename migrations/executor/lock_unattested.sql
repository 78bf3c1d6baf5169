-- lock_unattested locks up to max_rows requests that ended in SQL and
-- still lack an attestation.

CREATE OR REPLACE FUNCTION ledger.lock_unattested(max_rows integer) RETURNS TABLE(id uuid, tool text, principal text, run_id text, state text, error_kind text, error text, input_digest bytea, submitted_at timestamp with time zone, finished_at timestamp with time zone, stream_version bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT r.id, r.tool, r.principal, coalesce(r.run_id, ''), r.state, coalesce(r.error_kind, ''),
           coalesce(r.error, ''), r.input_digest, r.submitted_at, r.finished_at,
           (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || r.id)
    FROM ledger.request_status r
    WHERE r.attestation_digest IS NULL AND r.finished_at IS NOT NULL
    ORDER BY r.finished_at
    LIMIT max_rows
    FOR UPDATE OF r SKIP LOCKED
$$;

REVOKE ALL ON FUNCTION ledger.lock_unattested(max_rows integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.lock_unattested(max_rows integer) TO ledger_executor;

-- awaiting_approval lists the requests that wait for approval, oldest
-- first, each with the input it asks to run: what an approver decides
-- with ledger.approve (binding input_digest) or ledger.deny_approval (the
-- console's Approvals page, execledger approvals). An approver may read
-- neither the log, where the input is recorded, nor the queue: this
-- function reads both for it, and only for requests in
-- awaiting_approval, so an approver sees no input of a request that runs,
-- has ended or waits for nobody. The input is tool.requested's, as
-- recorded (redacted as stored); input_digest is the SHA-256 of its text
-- at submission, the digest an approval binds to. With p_request_id it is
-- that request's row, or none when the request does not wait for approval.
--
-- It finds the requests through the queue, which holds only the requests
-- that are not final, so the list costs the same at a million requests as
-- at ten. Approvers, auditors and administrators may call it (an auditor
-- or administrator reads the log anyway); submitters may not.
--
-- SET enable_seqscan (014): a probe of request_status and of the stream's
-- first event per waiting request, whatever size the tables had when the
-- plan was made.

CREATE OR REPLACE FUNCTION ledger.awaiting_approval(p_limit integer DEFAULT 200, p_request_id uuid DEFAULT NULL)
    RETURNS TABLE(id uuid, principal text, tool text, run_id text, input_digest text, submitted_at timestamp with time zone,
                  input jsonb, idempotency_key text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF NOT (pg_has_role(session_user, 'ledger_approver', 'MEMBER') OR pg_has_role(session_user, 'ledger_auditor', 'MEMBER')
            OR pg_has_role(session_user, 'ledger_admin', 'MEMBER')) THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: login role "%" is not an approver, auditor or administrator', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'grant it ledger_approver to decide approvals; a submitter lists its own waiting requests in ledger.requests';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: limit % is not between 1 and 10000', p_limit
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT r.id, r.principal, r.tool, r.run_id, 'sha256:' || encode(r.input_digest, 'hex'), r.submitted_at,
           (e.payload -> 'input')::jsonb, r.idempotency_key
    FROM ledger.queue q
    JOIN ledger.request_status r ON r.id = q.id
    -- A lateral probe of (stream, version = 1): a join may keep a plan
    -- that reads every request's first event (TestHotPlansIgnoreStatistics).
    LEFT JOIN LATERAL (SELECT e.payload FROM ledger.events e
                       WHERE e.stream = 'request:' || r.id::text AND e.version = 1 LIMIT 1) e ON true
    WHERE q.state = 'awaiting_approval' AND r.state = 'awaiting_approval'
      AND (p_request_id IS NULL OR q.id = p_request_id)
    ORDER BY r.submitted_at, r.id
    LIMIT p_limit;
END
$$;

COMMENT ON FUNCTION ledger.awaiting_approval(integer, uuid) IS 'The requests that wait for approval, oldest first, with their recorded input and its digest (approvers, auditors, administrators).';

REVOKE ALL ON FUNCTION ledger.awaiting_approval(integer, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer, uuid) TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer, uuid) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer, uuid) TO ledger_admin;

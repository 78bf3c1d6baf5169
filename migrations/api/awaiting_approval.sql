-- awaiting_approval lists the requests that wait for approval, oldest
-- first: what an approver decides with ledger.approve or
-- ledger.deny_approval (the console's Approvals page). It finds them
-- through the queue, which holds only the requests that are not final, so
-- the list costs the same at a million requests as at ten; an approver may
-- not read the queue itself. It returns the request_status rows an
-- approver, an auditor or an administrator already sees (row security
-- shows them every row), and nothing to anyone else.
--
-- SET enable_seqscan (014): a probe of request_status per waiting request
-- whatever size the tables had when the plan was made.

CREATE OR REPLACE FUNCTION ledger.awaiting_approval(p_limit integer DEFAULT 200)
    RETURNS TABLE(id uuid, principal text, tool text, run_id text, input_digest text, submitted_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF NOT (pg_has_role(session_user, 'ledger_approver', 'MEMBER') OR pg_has_role(session_user, 'ledger_auditor', 'MEMBER')
            OR pg_has_role(session_user, 'ledger_admin', 'MEMBER')) THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: login role "%" is not an approver, auditor or administrator', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'ledger.awaiting_approval: limit % is not between 1 and 10000', p_limit
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT r.id, r.principal, r.tool, r.run_id, 'sha256:' || encode(r.input_digest, 'hex'), r.submitted_at
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'awaiting_approval' AND r.state = 'awaiting_approval'
    ORDER BY r.submitted_at, r.id
    LIMIT p_limit;
END
$$;

COMMENT ON FUNCTION ledger.awaiting_approval(integer) IS 'The requests that wait for approval, oldest first (approvers, auditors, administrators).';

REVOKE ALL ON FUNCTION ledger.awaiting_approval(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer) TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.awaiting_approval(integer) TO ledger_admin;

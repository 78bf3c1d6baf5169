-- 003: what executors need. Claims with leases, per-run budgets, approvals.

-- Requests that ended in SQL (cancelled while pending, approval denied)
-- wait here for an executor to sign their attestation.
CREATE INDEX request_status_unattested_idx ON ledger.request_status (finished_at)
    WHERE attestation_digest IS NULL AND finished_at IS NOT NULL;
CREATE INDEX queue_approval_idx ON ledger.queue (approval_expires_at) WHERE state = 'awaiting_approval';

-- Durable per-run budgets, keyed by the principal and its run id (two
-- principals never share a budget). used counts the budget.consumed events
-- of the run's requests; this table is their read model, written in the
-- same transaction.
CREATE TABLE ledger.runs (
    principal  text        NOT NULL,
    run_id     text        NOT NULL,
    max_calls  int,                    -- NULL: the executor's configured default
    used       int         NOT NULL DEFAULT 0,
    version    bigint      NOT NULL DEFAULT 0, -- head of stream run:<principal>/<run_id>
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (principal, run_id),
    CONSTRAINT runs_max_calls_check CHECK (max_calls IS NULL OR max_calls BETWEEN 0 AND 1000000),
    CONSTRAINT runs_used_check CHECK (used >= 0)
) WITH (fillfactor = 80);
COMMENT ON TABLE ledger.runs IS 'Per-run call budgets; derived from run.* and budget.consumed events.';

-- set_run_budget sets the number of tool calls a run of the caller's
-- principal may make (run.budget_set on stream run:<principal>/<run_id>).
-- Lowering it below what was used leaves the run exhausted.
CREATE FUNCTION ledger.set_run_budget(run_id text, max_calls int) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text := ledger.current_principal();
    v_version   bigint;
BEGIN
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.set_run_budget: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF run_id IS NULL OR run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.set_run_budget: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_calls IS NULL OR max_calls < 0 OR max_calls > 1000000 THEN
        RAISE EXCEPTION 'ledger.set_run_budget: max_calls must be between 0 and 1000000, got %', coalesce(max_calls::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.runs AS r (principal, run_id, max_calls, version)
    VALUES (v_principal, set_run_budget.run_id, set_run_budget.max_calls, 1)
    ON CONFLICT (principal, run_id) DO UPDATE SET max_calls = EXCLUDED.max_calls, version = r.version + 1
    RETURNING r.version INTO v_version;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('run:' || v_principal || '/' || set_run_budget.run_id, v_version, 'run.budget_set',
            json_build_object('principal', v_principal, 'run_id', set_run_budget.run_id, 'max_calls', set_run_budget.max_calls),
            json_build_object('actor', v_principal, 'login_role', session_user));
END $$;

-- approve lets a request that waits for approval run. The approver is a
-- principal holding ledger_approver and never the submitter; the approval
-- is bound to the digest of the input the approver saw (input_digest as
-- shown in the tool.requested event: "sha256:<hex>"), so it cannot be
-- replayed for other input. With input_digest NULL the current input is
-- approved as is.
CREATE FUNCTION ledger.approve(request_id uuid, note text DEFAULT NULL, input_digest text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, true, note, input_digest);
END $$;

-- deny_approval refuses a request that waits for approval: it ends denied
-- with error_kind approval_denied.
CREATE FUNCTION ledger.deny_approval(request_id uuid, note text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, false, note, NULL);
END $$;

CREATE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_principal text := ledger.current_principal();
    v_op        text := CASE WHEN p_grant THEN 'ledger.approve' ELSE 'ledger.deny_approval' END;
    v_req       record;
    v_q         record;
    v_digest    text;
BEGIN
    IF v_principal IS NULL OR NOT pg_has_role(session_user, 'ledger_approver', 'MEMBER') THEN
        RAISE EXCEPTION '%: login role "%" is not an approver', v_op, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_note IS NOT NULL AND octet_length(p_note) > 1024 THEN
        RAISE EXCEPTION '%: note is % bytes, the limit is 1024', v_op, octet_length(p_note)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    SELECT r.principal, r.input_digest INTO v_req FROM ledger.request_status r WHERE r.id = p_request_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no request %', v_op, p_request_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_req.principal = v_principal THEN
        RAISE EXCEPTION '%: principal % submitted request % and may not decide its approval', v_op, v_principal, p_request_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    v_digest := 'sha256:' || encode(v_req.input_digest, 'hex');
    IF p_digest IS NOT NULL AND p_digest <> v_digest THEN
        RAISE EXCEPTION '%: request % has input %, not the % that was approved', v_op, p_request_id, v_digest, p_digest
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT q.state, q.stream_version INTO v_q FROM ledger.queue q WHERE q.id = p_request_id FOR UPDATE;
    IF NOT FOUND OR v_q.state <> 'awaiting_approval' THEN
        RAISE EXCEPTION '%: request % is not awaiting approval', v_op, p_request_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || p_request_id, v_q.stream_version + 1,
            CASE WHEN p_grant THEN 'approval.granted' ELSE 'approval.denied' END,
            json_build_object('request_id', p_request_id, 'approver', v_principal, 'note', p_note,
                              'input_digest', v_digest, 'reason', CASE WHEN p_grant THEN 'approved' ELSE 'denied_by_approver' END),
            json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id));
    IF p_grant THEN
        UPDATE ledger.queue
        SET state = 'pending', stream_version = stream_version + 1, approved_digest = v_req.input_digest,
            approval_expires_at = NULL, available_at = clock_timestamp()
        WHERE id = p_request_id;
        UPDATE ledger.request_status SET state = 'pending' WHERE id = p_request_id;
        PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
        IF FOUND THEN
            PERFORM pg_notify('ledger_request_pending', p_request_id::text);
        END IF;
    ELSE
        DELETE FROM ledger.queue WHERE id = p_request_id;
        UPDATE ledger.request_status
        SET state = 'denied', error_kind = 'approval_denied',
            error = 'approval denied by ' || v_principal || coalesce(': ' || p_note, ''), finished_at = clock_timestamp()
        WHERE id = p_request_id;
        PERFORM pg_notify('ledger_request_done', p_request_id::text);
    END IF;
END $$;

-- claim_requests takes up to max_requests pending requests in claim order,
-- skipping rows other executors hold, marks them running under a new claim
-- with a lease, appends request.claimed to each and returns what the
-- executor needs to authorize and run them. The caller's transaction
-- continues with authorization, so that a budget is consumed atomically
-- with the claim.
CREATE FUNCTION ledger.claim_requests(executor text, max_requests int, lease interval)
RETURNS TABLE (id uuid, claim_id uuid, attempt int, stream_version bigint, principal text, tool text, run_id text,
               input text, context text, input_digest bytea, approved boolean, charged boolean, submitted_at timestamptz)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
        SET state = 'running', claimed_by = executor, claim_id = gen_random_uuid(), attempt = q.attempt + 1,
            lease_expires_at = clock_timestamp() + lease, stream_version = q.stream_version + 1, started_at = NULL
        FROM picked WHERE q.id = picked.id
        RETURNING q.*
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || c.id, c.stream_version, 'request.claimed',
               json_build_object('request_id', c.id, 'executor', executor, 'claim_id', c.claim_id,
                                 'attempt', c.attempt, 'lease_expires_at', c.lease_expires_at),
               json_build_object('actor', executor, 'correlation_id', c.id)
        FROM claimed c
    )
    SELECT c.id, c.claim_id, c.attempt, c.stream_version, r.principal, r.tool, r.run_id,
           (e.payload -> 'input')::text, (e.payload -> 'context')::text, r.input_digest,
           c.approved_digest IS NOT DISTINCT FROM r.input_digest, c.charged, r.submitted_at
    FROM claimed c
    JOIN ledger.request_status r ON r.id = c.id
    JOIN ledger.events e ON e.stream = 'request:' || c.id AND e.version = 1
    ORDER BY c.priority DESC, c.available_at, c.id;
END $$;

REVOKE ALL ON ledger.runs FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.set_run_budget(text, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.approve(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.deny_approval(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.decide_approval(uuid, boolean, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.claim_requests(text, int, interval) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ledger.set_run_budget(text, int) TO ledger_submitter, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.approve(uuid, text, text) TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.deny_approval(uuid, text) TO ledger_approver;
GRANT EXECUTE ON FUNCTION ledger.claim_requests(text, int, interval) TO ledger_executor;
GRANT SELECT ON ledger.runs TO ledger_executor, ledger_auditor, ledger_admin;
-- Executors keep the read models and the queue current in the transactions
-- that append the events they derive from.
GRANT SELECT, INSERT, UPDATE ON ledger.runs TO ledger_executor;
GRANT UPDATE, DELETE ON ledger.queue TO ledger_executor;
GRANT UPDATE ON ledger.request_status TO ledger_executor;
GRANT SELECT, INSERT, DELETE ON ledger.queue_waiters TO ledger_executor;
CREATE POLICY request_status_executor_update ON ledger.request_status FOR UPDATE TO ledger_executor
    USING (true) WITH CHECK (true);

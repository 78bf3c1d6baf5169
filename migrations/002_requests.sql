-- 002: requests. The principal map, the request read model, the work queue
-- and the SQL API services call: ledger.submit, ledger.cancel, ledger.requests.

-- Login role -> principal. The principal of a call is always looked up here
-- from session_user; it is never an argument.
CREATE TABLE ledger.principals (
    login_role name        PRIMARY KEY,
    principal  text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT principals_principal_check CHECK (principal ~ '^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$')
);
COMMENT ON TABLE ledger.principals IS 'Maps a login role (session_user) to the principal its calls act as.';
CREATE INDEX principals_principal_idx ON ledger.principals (principal);

-- current_principal is the principal of the calling login role, or NULL.
CREATE FUNCTION ledger.current_principal() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.principal FROM ledger.principals p WHERE p.login_role = session_user
$$;

-- uuid_v7 makes time-ordered ids (RFC 9562 version 7): new rows land at the
-- right edge of the id indexes instead of on random pages. It has no SET
-- search_path, so that it can be inlined into its callers (re-planning it
-- per call cost 13% of a submit); every name in it is schema-qualified
-- instead, and only SECURITY DEFINER functions with a fixed search_path
-- call it.
CREATE FUNCTION ledger.uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(pg_catalog.set_bit(
            pg_catalog.overlay(pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                pg_catalog.substring(pg_catalog.int8send(pg_catalog.int8(
                    pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)), 3),
                1, 6),
            52, 1), 53, 1), 'hex')::pg_catalog.uuid
$$;

-- The request read model: one row per request, written in the same
-- transaction as the events it is derived from, and rebuildable from them.
-- Rows change state a few times, so leave room for HOT updates.
CREATE TABLE ledger.request_status (
    id                 uuid        PRIMARY KEY,
    principal          text        NOT NULL,
    tool               text        NOT NULL,
    run_id             text,
    idempotency_key    text,
    input_digest       bytea       NOT NULL,
    state              text        NOT NULL DEFAULT 'pending',
    error_kind         text,
    error              text,
    output             jsonb,
    tier               text,
    attestation_digest text,
    submitted_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at        timestamptz,
    CONSTRAINT request_status_state_check CHECK (state IN
        ('pending', 'awaiting_approval', 'running', 'succeeded', 'failed', 'denied', 'cancelled')),
    CONSTRAINT request_status_error_kind_check CHECK (error_kind IS NULL OR error_kind IN
        ('invalid_input', 'policy_denied', 'budget_exhausted', 'approval_denied', 'skill_not_active',
         'capability_denied', 'workspace_scope_denied', 'egress_denied', 'quota_exceeded', 'timed_out',
         'spawn_failed', 'runtime_failure', 'cancelled', 'outcome_unknown')),
    CONSTRAINT request_status_final_check CHECK (
        (state IN ('succeeded', 'failed', 'denied', 'cancelled')) = (finished_at IS NOT NULL))
) WITH (fillfactor = 80);
COMMENT ON TABLE ledger.request_status IS 'Read model behind ledger.requests; derived from the request:<id> streams.';

CREATE UNIQUE INDEX request_status_idempotency_idx ON ledger.request_status (principal, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- The work queue: one narrow row per request that is not final. Final
-- requests leave it, so it stays small however long the log grows. Rows are
-- inserted and deleted at a high rate, so vacuum it eagerly and by count,
-- never by a fraction of a table that is near empty.
CREATE TABLE ledger.queue (
    id               uuid        PRIMARY KEY,
    state            text        NOT NULL DEFAULT 'pending',
    priority         smallint    NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempt          int         NOT NULL DEFAULT 0,
    claimed_by       text,
    lease_expires_at timestamptz,
    cancel_requested boolean     NOT NULL DEFAULT false,
    -- A claim is identified by claim_id: heartbeats, completion and rescue
    -- act on a request only while its claim_id is still the one they hold or
    -- saw. stream_version is the head of the request's stream, so writers
    -- append without reading the log. started_at is set when execution may
    -- have begun: a request whose lease expires after that is re-run only if
    -- its tool is safe to repeat.
    claim_id            uuid,
    stream_version      bigint      NOT NULL DEFAULT 1,
    started_at          timestamptz,
    approved_digest     bytea,       -- input digest an approver approved
    approval_expires_at timestamptz,
    charged             boolean     NOT NULL DEFAULT false, -- the run's budget paid for this request
    CONSTRAINT queue_state_check CHECK (state IN ('pending', 'awaiting_approval', 'running'))
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 500,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 1000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
COMMENT ON TABLE ledger.queue IS 'Requests that are not final; the claim index matches the claim order.';

-- The claim order: highest priority first, then oldest. Only pending rows.
CREATE INDEX queue_claim_idx ON ledger.queue (priority DESC, available_at, id) WHERE state = 'pending';
-- Lease rescue scans running rows by expiry.
CREATE INDEX queue_lease_idx ON ledger.queue (lease_expires_at) WHERE state = 'running';

-- Executors that are idle and want a NOTIFY on ledger_request_pending. A
-- NOTIFY serializes committing transactions cluster-wide (PostgreSQL holds a
-- global lock from pre-commit to the end of commit), which cut submit
-- throughput to 0.28x of a plain insert here. So submit notifies only while
-- some executor is registered as waiting. An executor registers, then waits
-- until every transaction older than its registration has ended (the same
-- xid8 horizon ledger.read_all uses) and claims once more before it sleeps:
-- a submit that looked before the registration was visible has committed by
-- then, so no request is left waiting for a notification that never comes.
CREATE UNLOGGED TABLE ledger.queue_waiters (
    executor   text        PRIMARY KEY,
    since      timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE ledger.queue_waiters IS 'Idle executors asking submit to NOTIFY ledger_request_pending.';

-- submit records a tool request: the tool.requested event, the read-model
-- row and the queue row, in the caller's transaction. A repeated
-- (principal, idempotency_key) returns the first request's id and writes
-- nothing; reusing a key for a different tool or input is an error.
CREATE FUNCTION ledger.submit(
    tool            text,
    input           jsonb,
    run_id          text  DEFAULT NULL,
    idempotency_key text  DEFAULT NULL,
    context         jsonb DEFAULT '{}'
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text;
    v_id        uuid;
    v_input     text;
    v_digest    bytea;
    v_existing  record;
    v_payload   text;
    v_meta      text;
    v_bad       text;
BEGIN
    SELECT p.principal INTO v_principal FROM ledger.principals p WHERE p.login_role = session_user;
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'an administrator adds it to ledger.principals';
    END IF;

    IF tool IS NULL OR tool !~ '^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$' OR octet_length(tool) > 128 THEN
        RAISE EXCEPTION 'ledger.submit: tool must be a dotted identifier of at most 128 bytes, got %',
            coalesce(quote_literal(left(tool, 200)), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF input IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF jsonb_typeof(input) <> 'object' THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got %', jsonb_typeof(input)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_input := input::text;
    IF octet_length(v_input) > 1048576 THEN
        RAISE EXCEPTION 'ledger.submit: input is % bytes, the limit is 1048576', octet_length(v_input)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF run_id IS NOT NULL AND run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.submit: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF idempotency_key IS NOT NULL AND (idempotency_key = '' OR octet_length(idempotency_key) > 255
                                        OR idempotency_key ~ '[[:cntrl:]]') THEN
        RAISE EXCEPTION 'ledger.submit: idempotency_key must be 1 to 255 bytes without control characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF context IS NULL OR jsonb_typeof(context) <> 'object' THEN
        RAISE EXCEPTION 'ledger.submit: context must be a JSON object, got %', coalesce(jsonb_typeof(context), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF context <> '{}' THEN
        SELECT k INTO v_bad FROM jsonb_object_keys(context) AS k
        WHERE k NOT IN ('device', 'channel', 'session') LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context key "%" is not one of device, channel, session', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT k INTO v_bad FROM jsonb_each(context) AS c(k, v)
        WHERE jsonb_typeof(c.v) <> 'string' OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND 256 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context.% must be a string of 1 to 256 bytes', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    v_digest := sha256(convert_to(v_input, 'UTF8'));
    v_id := ledger.uuid_v7();

    INSERT INTO ledger.request_status AS r (id, principal, tool, run_id, idempotency_key, input_digest)
    VALUES (v_id, v_principal, submit.tool, submit.run_id, submit.idempotency_key, v_digest)
    ON CONFLICT (principal, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
    IF NOT FOUND THEN
        SELECT r.id, r.tool, r.input_digest, r.run_id INTO v_existing
        FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = submit.idempotency_key;
        IF v_existing.tool <> submit.tool OR v_existing.input_digest <> v_digest
           OR v_existing.run_id IS DISTINCT FROM submit.run_id THEN
            RAISE EXCEPTION 'ledger.submit: idempotency key % already names request %, which has another tool, input or run_id',
                quote_literal(idempotency_key), v_existing.id
                USING ERRCODE = 'unique_violation',
                      HINT = 'a retry must repeat the same tool, input and run_id';
        END IF;
        RETURN v_existing.id;
    END IF;

    v_payload := json_build_object(
        'request_id', v_id,
        'principal', v_principal,
        'tool', submit.tool,
        'run_id', submit.run_id,
        'idempotency_key', submit.idempotency_key,
        'input', input,
        'input_digest', 'sha256:' || encode(v_digest, 'hex'),
        'context', context)::text;
    v_meta := json_build_object(
        'actor', v_principal,
        'login_role', session_user,
        'correlation_id', v_id)::text;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload::json, v_meta::json);

    INSERT INTO ledger.queue (id) VALUES (v_id);

    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', v_id::text);
    END IF;
    RETURN v_id;
END $$;

-- cancel ends a pending or awaiting request at once (request.cancelled,
-- state cancelled, NOTIFY ledger_request_done). A running request is marked
-- for cancellation, its executor told by NOTIFY ledger_request_cancel; the
-- executor stops the work and records the cancellation. Returns false when
-- the request is already final. A request the caller may not see does not
-- exist for it.
CREATE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_principal text;
    v_admin     boolean;
    v_req       record;
    v_q         record;
BEGIN
    v_principal := ledger.current_principal();
    v_admin := pg_has_role(session_user, 'ledger_admin', 'MEMBER');
    IF v_principal IS NULL AND NOT v_admin THEN
        RAISE EXCEPTION 'ledger.cancel: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF reason IS NOT NULL AND octet_length(reason) > 1024 THEN
        RAISE EXCEPTION 'ledger.cancel: reason is % bytes, the limit is 1024', octet_length(reason)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;

    SELECT r.id, r.principal, r.state INTO v_req
    FROM ledger.request_status r WHERE r.id = request_id;
    IF NOT FOUND OR (v_req.principal IS DISTINCT FROM v_principal AND NOT v_admin) THEN
        RAISE EXCEPTION 'ledger.cancel: no request %', request_id USING ERRCODE = 'no_data_found';
    END IF;

    -- The queue row is the lock that orders cancel against claim and completion.
    SELECT q.state, q.cancel_requested, q.stream_version INTO v_q FROM ledger.queue q WHERE q.id = request_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF v_q.state = 'running' THEN
        IF NOT v_q.cancel_requested THEN
            UPDATE ledger.queue SET cancel_requested = true WHERE id = request_id;
            PERFORM pg_notify('ledger_request_cancel', request_id::text);
        END IF;
        RETURN true;
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || request_id, v_q.stream_version + 1, 'request.cancelled',
            json_build_object('request_id', request_id, 'reason', reason, 'previous_state', v_q.state),
            json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                              'correlation_id', request_id));
    DELETE FROM ledger.queue WHERE id = request_id;
    UPDATE ledger.request_status
    SET state = 'cancelled', error_kind = 'cancelled',
        error = 'cancelled by ' || coalesce(v_principal, session_user::text) || coalesce(': ' || reason, ''),
        finished_at = clock_timestamp()
    WHERE id = request_id;
    PERFORM pg_notify('ledger_request_done', request_id::text);
    RETURN true;
END $$;

-- Row-level security: a submitter sees its own principal's rows; approvers,
-- executors, auditors and admins see all. ledger.requests is a
-- security_invoker view, so these policies apply to whoever reads it.
ALTER TABLE ledger.request_status ENABLE ROW LEVEL SECURITY;
CREATE POLICY request_status_own ON ledger.request_status FOR SELECT TO ledger_submitter
    USING (principal = (SELECT ledger.current_principal()));
CREATE POLICY request_status_all ON ledger.request_status FOR SELECT
    TO ledger_approver, ledger_executor, ledger_auditor, ledger_admin
    USING (true);

CREATE VIEW ledger.requests WITH (security_invoker = true) AS
SELECT r.id, r.principal, r.tool, r.run_id, r.state, r.error_kind, r.error, r.output, r.tier,
       r.attestation_digest, r.submitted_at, r.finished_at
FROM ledger.request_status r;
COMMENT ON VIEW ledger.requests IS 'One row per request; a submitter sees only its own principal''s rows.';

REVOKE ALL ON ledger.principals, ledger.request_status, ledger.queue, ledger.queue_waiters, ledger.requests FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.submit(text, jsonb, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.cancel(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.current_principal() FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.uuid_v7() FROM PUBLIC;

GRANT SELECT ON ledger.request_status, ledger.requests
    TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.current_principal()
    TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.submit(text, jsonb, text, text, jsonb) TO ledger_submitter, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.cancel(uuid, text) TO ledger_submitter, ledger_admin;
GRANT SELECT ON ledger.principals TO ledger_auditor, ledger_executor;
GRANT SELECT, INSERT, UPDATE, DELETE ON ledger.principals TO ledger_admin;
GRANT SELECT ON ledger.queue TO ledger_executor, ledger_auditor, ledger_admin;

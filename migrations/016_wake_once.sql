-- Migration 016: one wake-up per idle spell, not one per submit.
--
-- An idle executor registers in ledger.queue_waiters and LISTENs on
-- ledger_request_pending; until now every submit then sent a NOTIFY, until
-- the executor had claimed work and unregistered. A transaction that
-- NOTIFYs takes a database-wide lock at commit and holds it through the
-- WAL flush, so while an executor waited every submitter's commit was
-- serialized (0.07-0.11x a plain insert from 8 connections, against
-- 0.3x without the NOTIFY: docs/benchmarks.md). Now a submit takes the
-- registrations as it wakes them: the first submit after an executor
-- registered deletes its row and NOTIFYs, the ones after it find no row
-- and send nothing, until an executor that found the queue empty
-- registers again. A row another submit is deleting is skipped, not
-- waited for: that submit's NOTIFY wakes the executor, whose claims then
-- see this request (it has committed, or it began before the executor's
-- next registration, whose horizon wait covers it). A NOTIFY that never
-- comes (the other submitter rolls back, or keeps its transaction open)
-- is covered by the executor's poll interval, as any lost NOTIFY is.

-- A registration is a row of its own, never updated in place, and the
-- executor's functions skip rows another transaction holds: a submit that
-- took a registration locks its row until the submitter's transaction
-- ends, which its caller may put off as long as it likes, and an upsert or
-- a delete of that row would wait for it (an executor's claim loop stuck
-- behind any submitter's open transaction). A row left locked is the
-- holder's to delete; if it rolls back, the row is a stale registration,
-- and the next submit takes it and NOTIFYs once for nothing.
ALTER TABLE ledger.queue_waiters DROP CONSTRAINT queue_waiters_pkey;
ALTER TABLE ledger.queue_waiters ADD COLUMN registration bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
COMMENT ON TABLE ledger.queue_waiters IS 'Idle executors asking submit to NOTIFY ledger_request_pending: one row per registration, which the submit that wakes them deletes.';

CREATE OR REPLACE FUNCTION ledger.register_waiter(executor text) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = register_waiter.executor FOR UPDATE SKIP LOCKED);
    INSERT INTO ledger.queue_waiters (executor) VALUES (register_waiter.executor);
$$;

CREATE OR REPLACE FUNCTION ledger.unregister_waiter(executor text) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM ledger.queue_waiters w
    WHERE w.registration IN (SELECT x.registration FROM ledger.queue_waiters x
                             WHERE x.executor = unregister_waiter.executor FOR UPDATE SKIP LOCKED);
$$;

CREATE FUNCTION ledger.wake_waiters() RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
SET enable_seqscan = on -- a few rows, in an unlogged table that is mostly empty
AS $$
BEGIN
    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    WITH taken AS (SELECT x.registration FROM ledger.queue_waiters x FOR UPDATE SKIP LOCKED)
    DELETE FROM ledger.queue_waiters w USING taken t WHERE w.registration = t.registration;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', '');
    END IF;
END $$;

REVOKE ALL ON FUNCTION ledger.wake_waiters() FROM PUBLIC;

-- submit: wakes the waiters once (013's body otherwise).
CREATE OR REPLACE FUNCTION ledger.submit(
    tool            text,
    input           jsonb,
    run_id          text  DEFAULT NULL,
    idempotency_key text  DEFAULT NULL,
    context         jsonb DEFAULT '{}'
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_principal text;
    v_channel   text;
    v_device    text;
    v_bound     text[] := '{}';
    v_id        uuid;
    v_input     text;
    v_digest    bytea;
    v_existing  record;
    v_payload   text;
    v_meta      text;
    v_bad       text;
    v_pos       bigint;
    v_trace     text;
    v_span      text;
BEGIN
    SELECT p.principal, p.channel, p.device INTO v_principal, v_channel, v_device
    FROM ledger.principals p WHERE p.login_role = session_user;
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
        WHERE k NOT IN ('device', 'channel', 'session', 'traceparent', 'tracestate') LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context key "%" is not one of device, channel, session, traceparent, tracestate', v_bad
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        SELECT k INTO v_bad FROM jsonb_each(context) AS c(k, v)
        WHERE jsonb_typeof(c.v) <> 'string'
           OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND CASE WHEN c.k = 'tracestate' THEN 512 ELSE 256 END LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit: context.% must be a string of 1 to % bytes', v_bad,
                CASE WHEN v_bad = 'tracestate' THEN 512 ELSE 256 END
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        -- W3C Trace Context: the submitter's span. Version 00 exactly;
        -- a later version's first four fields (the spec's forward rule);
        -- never version ff, an all-zero trace id or an all-zero parent id.
        IF context ? 'traceparent' THEN
            IF context ->> 'traceparent' !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[ -~]*)?$'
               OR left(context ->> 'traceparent', 2) = 'ff'
               OR (left(context ->> 'traceparent', 2) = '00' AND octet_length(context ->> 'traceparent') <> 55)
               OR substr(context ->> 'traceparent', 4, 32) = repeat('0', 32)
               OR substr(context ->> 'traceparent', 37, 16) = repeat('0', 16) THEN
                RAISE EXCEPTION 'ledger.submit: context.traceparent % is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, ids not all zero)',
                    quote_literal(left(context ->> 'traceparent', 80))
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_trace := substr(context ->> 'traceparent', 4, 32);
            v_span := substr(context ->> 'traceparent', 37, 16);
        ELSIF context ? 'tracestate' THEN
            RAISE EXCEPTION 'ledger.submit: context.tracestate needs a context.traceparent'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF context ->> 'tracestate' ~ '[^ -~]' THEN
            RAISE EXCEPTION 'ledger.submit: context.tracestate must be printable ASCII (W3C tracestate)'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    -- Bound context: the administrator's value, never the caller's.
    IF v_channel IS NOT NULL THEN
        IF context ? 'channel' AND context ->> 'channel' <> v_channel THEN
            RAISE EXCEPTION 'ledger.submit: context.channel is bound to % for login role "%"; % is not it',
                quote_literal(v_channel), session_user, quote_literal(context ->> 'channel')
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        context := context || jsonb_build_object('channel', v_channel);
        v_bound := v_bound || 'channel'::text;
    END IF;
    IF v_device IS NOT NULL THEN
        IF context ? 'device' AND context ->> 'device' <> v_device THEN
            RAISE EXCEPTION 'ledger.submit: context.device is bound to % for login role "%"; % is not it',
                quote_literal(v_device), session_user, quote_literal(context ->> 'device')
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        context := context || jsonb_build_object('device', v_device);
        v_bound := v_bound || 'device'::text;
    END IF;

    v_digest := sha256(convert_to(v_input, 'UTF8'));
    v_id := ledger.uuid_v7();

    -- A repeated idempotency key returns the first request. The key's
    -- advisory lock orders two submits of one key: the second sees the
    -- first's row once it has committed.
    IF submit.idempotency_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('idempotency:' || v_principal || '/' || submit.idempotency_key, 0));
        SELECT r.id, r.tool, r.input_digest, r.run_id INTO v_existing
        FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = submit.idempotency_key;
        IF FOUND THEN
            IF v_existing.tool <> submit.tool OR v_existing.input_digest <> v_digest
               OR v_existing.run_id IS DISTINCT FROM submit.run_id THEN
                RAISE EXCEPTION 'ledger.submit: idempotency key % already names request %, which has another tool, input or run_id',
                    quote_literal(idempotency_key), v_existing.id
                    USING ERRCODE = 'unique_violation',
                          HINT = 'a retry must repeat the same tool, input and run_id';
            END IF;
            RETURN v_existing.id;
        END IF;
    END IF;

    v_payload := json_build_object(
        'request_id', v_id,
        'principal', v_principal,
        'tool', submit.tool,
        'run_id', submit.run_id,
        'idempotency_key', submit.idempotency_key,
        'input', input,
        'input_digest', 'sha256:' || encode(v_digest, 'hex'),
        'context', context,
        'context_bound', to_json(v_bound))::text;
    v_meta := CASE WHEN v_trace IS NULL
        THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id)
        ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id,
                               'trace_id', v_trace, 'span_id', v_span) END::text;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload::json, v_meta::json)
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);

    INSERT INTO ledger.queue (id, trace_id, trace_span_id) VALUES (v_id, v_trace, v_span);

    PERFORM ledger.wake_waiters();
    RETURN v_id;
END $$;

-- decide_approval: an approved request wakes the waiters once (013's body otherwise).
CREATE OR REPLACE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    v_principal text := ledger.current_principal();
    v_op        text := CASE WHEN p_grant THEN 'ledger.approve' ELSE 'ledger.deny_approval' END;
    v_req       record;
    v_q         record;
    v_digest    text;
    v_pos       bigint;
BEGIN
    IF v_principal IS NULL OR NOT pg_has_role(session_user, 'ledger_approver', 'MEMBER') THEN
        RAISE EXCEPTION '%: login role "%" is not an approver', v_op, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_note IS NOT NULL AND octet_length(p_note) > 1024 THEN
        RAISE EXCEPTION '%: note is % bytes, the limit is 1024', v_op, octet_length(p_note)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    SELECT r.principal, r.input_digest, r.state INTO v_req FROM ledger.request_status r WHERE r.id = p_request_id;
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
    SELECT q.state, q.stream_version, q.approved_digest, q.trace_id, q.trace_span_id INTO v_q FROM ledger.queue q WHERE q.id = p_request_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: request % has already ended (%)', v_op, p_request_id, v_req.state
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_q.state = 'running' THEN
        RAISE EXCEPTION '%: request % is running: it was authorized without waiting for approval', v_op, p_request_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'only tools the executor marks sensitive wait for approval; ledger.cancel stops a running request';
    END IF;
    IF v_q.state = 'pending' AND v_q.approved_digest IS NOT DISTINCT FROM v_req.input_digest THEN
        RAISE EXCEPTION '%: request % is approved already', v_op, p_request_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;

    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || p_request_id, v_q.stream_version + 1,
            CASE WHEN p_grant THEN 'approval.granted' ELSE 'approval.denied' END,
            json_build_object('request_id', p_request_id, 'approver', v_principal, 'note', p_note,
                              'input_digest', v_digest, 'reason', CASE WHEN p_grant THEN 'approved' ELSE 'denied_by_approver' END,
                              'previous_state', v_q.state,
                              'error', CASE WHEN NOT p_grant THEN 'approval denied by ' || v_principal || coalesce(': ' || p_note, '') END),
            CASE WHEN v_q.trace_id IS NULL
                THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id)
                ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id,
                                       'trace_id', v_q.trace_id, 'span_id', v_q.trace_span_id) END)
    RETURNING "position" INTO v_pos;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    IF p_grant THEN
        UPDATE ledger.queue
        SET state = 'pending', stream_version = stream_version + 1, approved_digest = v_req.input_digest,
            approval_expires_at = NULL,
            available_at = CASE WHEN v_q.state = 'awaiting_approval' THEN clock_timestamp() ELSE available_at END
        WHERE id = p_request_id;
        IF v_q.state = 'awaiting_approval' THEN
            PERFORM ledger.wake_waiters();
        END IF;
    ELSE
        DELETE FROM ledger.queue WHERE id = p_request_id;
        PERFORM ledger.notify_done(v_req.principal, p_request_id);
    END IF;
END $$;

-- CREATE OR REPLACE drops a function's SET clauses: 014's again.
ALTER FUNCTION ledger.submit(text, jsonb, text, text, jsonb) SET enable_seqscan = off;
ALTER FUNCTION ledger.decide_approval(uuid, boolean, text, text) SET enable_seqscan = off;

-- depends: api/wake_waiters.sql
-- depends: events/uuid_v7.sql
-- depends: projections/apply_requests.sql

-- submit records a tool request: the tool.requested event, the read-model
-- row and the queue row, in the caller's transaction. A repeated
-- (principal, idempotency_key) returns the first request's id and writes
-- nothing; reusing a key for a different tool or input is an error.
-- context.traceparent and context.tracestate become the trace metadata of
-- its events (013); it wakes waiting executors once, through
-- ledger.wake_waiters (016).
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.submit(tool text, input jsonb, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context jsonb DEFAULT '{}'::jsonb) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $_$
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
END $_$;

-- submit with input as text: what a call with an untyped literal or
-- parameter resolves to. It parses the input itself so that JSON
-- PostgreSQL cannot take (\u0000 above all, which jsonb refuses) is a
-- ledger.submit error with a stable SQLSTATE, then submits it.
CREATE OR REPLACE FUNCTION ledger.submit(tool text, input text, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context text DEFAULT '{}'::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_input   jsonb;
    v_context jsonb;
BEGIN
    IF input IS NULL THEN
        RAISE EXCEPTION 'ledger.submit: input must be a JSON object, got NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- An odd number of backslashes before u0000 is the escape of NUL.
    IF strpos(input, 'u0000') > 0 AND input ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RAISE EXCEPTION 'ledger.submit: input contains \u0000 (NUL), which PostgreSQL cannot store in JSON'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'encode binary data (base64, say) before putting it in a JSON string';
    END IF;
    IF context IS NOT NULL AND strpos(context, 'u0000') > 0 AND context ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RAISE EXCEPTION 'ledger.submit: context contains \u0000 (NUL), which PostgreSQL cannot store in JSON'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    BEGIN
        v_input := input::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character OR character_not_in_repertoire THEN
        RAISE EXCEPTION 'ledger.submit: input is not valid JSON: %', SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    BEGIN
        v_context := context::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character OR character_not_in_repertoire THEN
        RAISE EXCEPTION 'ledger.submit: context is not valid JSON: %', SQLERRM
            USING ERRCODE = 'invalid_parameter_value';
    END;
    RETURN ledger.submit(tool, v_input, run_id, idempotency_key, v_context);
END $$;

REVOKE ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_admin;

REVOKE ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_admin;

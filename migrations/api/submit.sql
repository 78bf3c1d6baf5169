-- depends: api/wake_waiters.sql
-- depends: events/uuid_v7.sql

-- submit records a tool request: the tool.requested event, the read-model
-- row and the queue row, in the caller's transaction. A repeated
-- (principal, idempotency_key) returns the first request's id and writes
-- nothing; reusing a key for a different tool or input is an error.
-- context.traceparent and context.tracestate become the trace metadata of
-- its events (013); it wakes waiting executors once, through
-- ledger.wake_waiters (016).
--
-- The request_status row is written from the values submit holds (issue
-- 24), not read back from the event it has just written: it is the row
-- ledger.apply_requests derives from that tool.requested event, column for
-- column (submitted_at is the event's recorded_at), which
-- ledger.TestSubmitRowEqualsRebuild and projector verify check.
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
    v_payload   json;
    v_meta      json;
    v_bad       text;
    v_at        timestamptz;
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
        'context_bound', to_json(v_bound));
    v_meta := CASE WHEN v_trace IS NULL
        THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id)
        ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', v_id,
                               'trace_id', v_trace, 'span_id', v_span) END;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload, v_meta)
    RETURNING recorded_at INTO v_at;
    INSERT INTO ledger.request_status (id, principal, tool, run_id, idempotency_key, input_digest, submitted_at)
    VALUES (v_id, v_principal, submit.tool, submit.run_id, submit.idempotency_key, v_digest, v_at);

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

-- submit_many records many tool requests in one call: element i of each
-- array is the i-th request, as ledger.submit would take it (run_ids,
-- idempotency_keys and contexts may be NULL as a whole: no run, no key, {}
-- for every element). It returns their ids in element order. The checks,
-- their messages and SQLSTATEs are submit's; the first element that fails
-- one (lowest index, 1-based) names itself: 'ledger.submit_many: element N:
-- ...', and nothing of the call is written. Every element is checked before
-- any idempotency key is looked up, as submit checks its arguments first. A
-- key already used returns that request's id; a key repeated within the
-- call returns its first element's id; either with another tool, input or
-- run_id is a unique_violation naming the later element. It is set-based:
-- one INSERT of all the events, one of all the request_status rows (from
-- the values it holds, as submit), one of all the queue rows, and one
-- wake_waiters.
--
-- The keys' advisory locks (submit's) are taken in ascending order of the
-- lock key, so two calls sharing keys wait for each other, never deadlock.
CREATE OR REPLACE FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[] DEFAULT NULL::text[], idempotency_keys text[] DEFAULT NULL::text[], contexts jsonb[] DEFAULT NULL::jsonb[]) RETURNS uuid[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$
DECLARE
    v_principal text;
    v_channel   text;
    v_device    text;
    v_bound     text[] := '{}';
    v_bind      jsonb := '{}';
    n           int;
    v_err       record;
    v_bad       bigint;
    v_ids       uuid[];
    v_any_new   boolean;
BEGIN
    SELECT p.principal, p.channel, p.device INTO v_principal, v_channel, v_device
    FROM ledger.principals p WHERE p.login_role = session_user;
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.submit_many: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'an administrator adds it to ledger.principals';
    END IF;

    IF tools IS NULL OR inputs IS NULL THEN
        RAISE EXCEPTION 'ledger.submit_many: % must be an array, got NULL', CASE WHEN tools IS NULL THEN 'tools' ELSE 'inputs' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    n := cardinality(tools);
    IF array_ndims(tools) > 1 OR array_ndims(inputs) > 1 OR array_ndims(run_ids) > 1
       OR array_ndims(idempotency_keys) > 1 OR array_ndims(contexts) > 1 THEN
        RAISE EXCEPTION 'ledger.submit_many: the arrays must be one-dimensional'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(inputs) <> n OR cardinality(run_ids) <> n OR cardinality(idempotency_keys) <> n
       OR cardinality(contexts) <> n THEN
        RAISE EXCEPTION 'ledger.submit_many: tools has % elements, but inputs %, run_ids %, idempotency_keys %, contexts % (each must have as many, or be NULL where allowed)',
            n, cardinality(inputs), coalesce(cardinality(run_ids)::text, 'NULL'),
            coalesce(cardinality(idempotency_keys)::text, 'NULL'), coalesce(cardinality(contexts)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Each key holds an advisory lock (a shared lock-table entry) until
    -- the transaction ends; the limit keeps one call well inside the
    -- table's default size (max_locks_per_transaction 64 × connections).
    IF n > 1000 THEN
        RAISE EXCEPTION 'ledger.submit_many: % requests in one call, the limit is 1000', n
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'split them into several calls';
    END IF;
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    IF v_channel IS NOT NULL THEN
        v_bind := v_bind || jsonb_build_object('channel', v_channel);
        v_bound := v_bound || 'channel'::text;
    END IF;
    IF v_device IS NOT NULL THEN
        v_bind := v_bind || jsonb_build_object('device', v_device);
        v_bound := v_bound || 'device'::text;
    END IF;

    -- Each element's first failing check, in submit's order and words.
    SELECT c.i, c.e[1] AS code, c.e[2] AS message INTO v_err
    FROM (
        SELECT u.i, CASE
            WHEN u.tool IS NULL OR u.tool !~ '^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$' OR octet_length(u.tool) > 128 THEN
                ARRAY['invalid_parameter_value', format('tool must be a dotted identifier of at most 128 bytes, got %s',
                      coalesce(quote_literal(left(u.tool, 200)), 'NULL'))]
            WHEN u.input IS NULL THEN
                ARRAY['null_value_not_allowed', 'input must be a JSON object, got NULL']
            WHEN jsonb_typeof(u.input) <> 'object' THEN
                ARRAY['invalid_parameter_value', format('input must be a JSON object, got %s', jsonb_typeof(u.input))]
            WHEN octet_length(u.input::text) > 1048576 THEN
                ARRAY['program_limit_exceeded', format('input is %s bytes, the limit is 1048576', octet_length(u.input::text))]
            WHEN u.run_id IS NOT NULL AND u.run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
                ARRAY['invalid_parameter_value', 'run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit']
            WHEN u.key IS NOT NULL AND (u.key = '' OR octet_length(u.key) > 255 OR u.key ~ '[[:cntrl:]]') THEN
                ARRAY['invalid_parameter_value', 'idempotency_key must be 1 to 255 bytes without control characters']
            WHEN u.context IS NULL OR jsonb_typeof(u.context) <> 'object' THEN
                ARRAY['invalid_parameter_value', format('context must be a JSON object, got %s', coalesce(jsonb_typeof(u.context), 'NULL'))]
            WHEN u.context = '{}' THEN NULL
            WHEN k.key IS NOT NULL THEN
                ARRAY['invalid_parameter_value', format('context key "%s" is not one of device, channel, session, traceparent, tracestate', k.key)]
            WHEN v.key IS NOT NULL THEN
                ARRAY['invalid_parameter_value', format('context.%s must be a string of 1 to %s bytes', v.key,
                      CASE WHEN v.key = 'tracestate' THEN 512 ELSE 256 END)]
            WHEN u.context ? 'traceparent'
                 AND (u.context ->> 'traceparent' !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[ -~]*)?$'
                      OR left(u.context ->> 'traceparent', 2) = 'ff'
                      OR (left(u.context ->> 'traceparent', 2) = '00' AND octet_length(u.context ->> 'traceparent') <> 55)
                      OR substr(u.context ->> 'traceparent', 4, 32) = repeat('0', 32)
                      OR substr(u.context ->> 'traceparent', 37, 16) = repeat('0', 16)) THEN
                ARRAY['invalid_parameter_value', format('context.traceparent %s is not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lower case, ids not all zero)',
                      quote_literal(left(u.context ->> 'traceparent', 80)))]
            WHEN NOT u.context ? 'traceparent' AND u.context ? 'tracestate' THEN
                ARRAY['invalid_parameter_value', 'context.tracestate needs a context.traceparent']
            WHEN u.context ->> 'tracestate' ~ '[^ -~]' THEN
                ARRAY['invalid_parameter_value', 'context.tracestate must be printable ASCII (W3C tracestate)']
            WHEN v_channel IS NOT NULL AND u.context ? 'channel' AND u.context ->> 'channel' <> v_channel THEN
                ARRAY['insufficient_privilege', format('context.channel is bound to %s for login role "%s"; %s is not it',
                      quote_literal(v_channel), session_user, quote_literal(u.context ->> 'channel'))]
            WHEN v_device IS NOT NULL AND u.context ? 'device' AND u.context ->> 'device' <> v_device THEN
                ARRAY['insufficient_privilege', format('context.device is bound to %s for login role "%s"; %s is not it',
                      quote_literal(v_device), session_user, quote_literal(u.context ->> 'device'))]
            END AS e
        FROM (SELECT u.tool, u.input, u.run_id, u.key, CASE WHEN contexts IS NULL THEN '{}' ELSE u.context END AS context, u.i
              FROM unnest(tools, inputs, run_ids, idempotency_keys, contexts) WITH ORDINALITY AS u(tool, input, run_id, key, context, i)) u
        LEFT JOIN LATERAL (
            SELECT x AS key FROM jsonb_object_keys(CASE WHEN jsonb_typeof(u.context) = 'object' THEN u.context END) AS x
            WHERE x NOT IN ('device', 'channel', 'session', 'traceparent', 'tracestate') LIMIT 1) k ON true
        LEFT JOIN LATERAL (
            SELECT c.k AS key FROM jsonb_each(CASE WHEN jsonb_typeof(u.context) = 'object' THEN u.context END) AS c(k, v)
            WHERE jsonb_typeof(c.v) <> 'string'
               OR octet_length(c.v #>> '{}') NOT BETWEEN 1 AND CASE WHEN c.k = 'tracestate' THEN 512 ELSE 256 END LIMIT 1) v ON true
    ) c
    WHERE c.e IS NOT NULL
    ORDER BY c.i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = v_err.code, MESSAGE = format('ledger.submit_many: element %s: %s', v_err.i, v_err.message);
    END IF;

    -- submit's per-key advisory locks, in one order for every caller.
    IF idempotency_keys IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(s.k)
        FROM (SELECT DISTINCT hashtextextended('idempotency:' || v_principal || '/' || x, 0) AS k
              FROM unnest(idempotency_keys) AS x WHERE x IS NOT NULL ORDER BY 1) s;
    END IF;

    -- One statement from here: each element's id (a new one, the existing
    -- request's of its key, or the id of the call's first element with
    -- its key; a key's first request must have the same tool, input and
    -- run_id), then, unless an element conflicts, the rows, built once:
    -- the events, the read-model rows from the same values and each
    -- event's recorded_at, the queue rows.
    WITH u AS MATERIALIZED (
        SELECT u.i, u.tool, u.input, u.run_id, u.key, u.context,
               sha256(convert_to(u.input::text, 'UTF8')) AS digest, ledger.uuid_v7() AS nid
        FROM unnest(tools, inputs, run_ids, idempotency_keys, contexts) WITH ORDINALITY AS u(tool, input, run_id, key, context, i)
    ), ex AS (
        SELECT r.idempotency_key AS key, r.id, r.tool, r.input_digest AS digest, r.run_id
        FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = ANY (idempotency_keys)
    ), f AS (
        SELECT DISTINCT ON (u.key) u.key, u.i, u.nid, u.tool, u.digest, u.run_id FROM u WHERE u.key IS NOT NULL ORDER BY u.key, u.i
    ), firsts AS (
        SELECT f.key, ex.id IS NOT NULL AS existed, f.i AS first_i, coalesce(ex.id, f.nid) AS id,
               CASE WHEN ex.id IS NOT NULL THEN ex.tool ELSE f.tool END AS tool,
               CASE WHEN ex.id IS NOT NULL THEN ex.digest ELSE f.digest END AS digest,
               CASE WHEN ex.id IS NOT NULL THEN ex.run_id ELSE f.run_id END AS run_id
        FROM f LEFT JOIN ex ON ex.key = f.key
    ), res AS MATERIALIZED (
        SELECT u.i, coalesce(fi.id, u.nid) AS id,
               fi.key IS NULL OR (NOT fi.existed AND fi.first_i = u.i) AS new,
               fi.key IS NOT NULL AND (fi.tool <> u.tool OR fi.digest <> u.digest OR fi.run_id IS DISTINCT FROM u.run_id) AS conflict
        FROM u LEFT JOIN firsts fi ON fi.key = u.key
    ), bad AS MATERIALIZED (
        SELECT min(res.i) AS i FROM res WHERE res.conflict
    ), x AS MATERIALIZED (
        SELECT u.i, res.id, u.tool, u.run_id, u.key, u.input, u.digest,
               CASE WHEN v_bind = '{}' OR u.context IS NULL THEN coalesce(u.context, '{}') ELSE u.context || v_bind END AS context,
               CASE WHEN u.context ? 'traceparent' THEN substr(u.context ->> 'traceparent', 4, 32) END AS trace,
               CASE WHEN u.context ? 'traceparent' THEN substr(u.context ->> 'traceparent', 37, 16) END AS span
        FROM u JOIN res ON res.i = u.i
        WHERE res.new AND (SELECT bad.i FROM bad) IS NULL
    ), ev AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || x.id, 1, 'tool.requested',
               json_build_object(
                   'request_id', x.id,
                   'principal', v_principal,
                   'tool', x.tool,
                   'run_id', x.run_id,
                   'idempotency_key', x.key,
                   'input', x.input,
                   'input_digest', 'sha256:' || encode(x.digest, 'hex'),
                   'context', x.context,
                   'context_bound', to_json(v_bound)),
               CASE WHEN x.trace IS NULL
                   THEN json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', x.id)
                   ELSE json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', x.id,
                                          'trace_id', x.trace, 'span_id', x.span) END
        FROM x ORDER BY x.i
        RETURNING stream, recorded_at
    ), rs AS (
        INSERT INTO ledger.request_status (id, principal, tool, run_id, idempotency_key, input_digest, submitted_at)
        SELECT x.id, v_principal, x.tool, x.run_id, x.key, x.digest, ev.recorded_at
        FROM x JOIN ev ON ev.stream = 'request:' || x.id
        ORDER BY x.i
    ), q AS (
        INSERT INTO ledger.queue (id, trace_id, trace_span_id)
        SELECT x.id, x.trace, x.span FROM x ORDER BY x.i
    )
    SELECT array_agg(res.id ORDER BY res.i), bool_or(res.new), (SELECT bad.i FROM bad)
    INTO v_ids, v_any_new, v_bad
    FROM res;

    IF v_bad IS NOT NULL THEN
        SELECT r.id, r.idempotency_key AS key INTO v_err FROM ledger.request_status r
        WHERE r.principal = v_principal AND r.idempotency_key = idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1];
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.submit_many: element %: idempotency key % already names request %, which has another tool, input or run_id',
                v_bad, quote_literal(v_err.key), v_err.id
                USING ERRCODE = 'unique_violation',
                      HINT = 'a retry must repeat the same tool, input and run_id';
        END IF;
        RAISE EXCEPTION 'ledger.submit_many: element %: idempotency key % already names element % of this call, which has another tool, input or run_id',
            v_bad, quote_literal(idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1]),
            array_position(idempotency_keys, idempotency_keys[array_lower(idempotency_keys, 1) + v_bad - 1]) - array_lower(idempotency_keys, 1) + 1
            USING ERRCODE = 'unique_violation',
                  HINT = 'a retry must repeat the same tool, input and run_id';
    END IF;
    IF NOT v_any_new THEN
        RETURN v_ids;
    END IF;

    PERFORM ledger.wake_waiters();
    RETURN v_ids;
END $_$;

REVOKE ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_admin;

REVOKE ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_admin;

REVOKE ALL ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.submit_many(tools text[], inputs jsonb[], run_ids text[], idempotency_keys text[], contexts jsonb[]) TO ledger_admin;

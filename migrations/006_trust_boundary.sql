-- 006: the executor's trust boundary, private completion notifications,
-- least-privilege grants.
--
-- Executors are trusted to run the tools they claim, not to rewrite
-- history. Until this migration a role holding only ledger_executor could
-- UPDATE any request's read-model row, append any event to any stream and
-- raise any run's budget. From here on an executor writes requests only
-- through the functions below, which check that its login role holds the
-- request's claim (or that the lease or approval it settles has expired),
-- and a request reaches a final state only together with an
-- attestation.signed event, written in the same transaction, whose
-- statement names that request and that outcome.
--
-- Notifications carry no request ids on shared channels: anyone who can
-- connect may LISTEN on any channel. ledger_request_pending and
-- ledger_request_cancel are payload-free wake-ups (executors re-read the
-- queue); ledger_request_done is a payload-free wake-up too, and each
-- principal's request ids go to a channel of its own whose name only it
-- (and the ledger) can compute: ledger.notify_channel().

-- The login role whose claim a queue row is: the claim id alone is no
-- secret (executors read the queue and request.claimed events).
ALTER TABLE ledger.queue ADD COLUMN claimed_role name;

-- ---------------------------------------------------------------------
-- Context an administrator vouches for.
--
-- A request's context (device, channel, session) is what its caller says.
-- An administrator may bind a login role's channel and device here: its
-- requests then carry those values whatever the caller sends (a
-- different value is refused), tool.requested lists them in
-- context_bound, and Cedar sees context.channel_bound / device_bound, so
-- that a policy can tell a vouched-for value from a claim.
ALTER TABLE ledger.principals
    ADD COLUMN channel text,
    ADD COLUMN device  text,
    ADD CONSTRAINT principals_channel_check CHECK (channel IS NULL OR octet_length(channel) BETWEEN 1 AND 256),
    ADD CONSTRAINT principals_device_check CHECK (device IS NULL OR octet_length(device) BETWEEN 1 AND 256);
COMMENT ON COLUMN ledger.principals.channel IS 'When set, the context.channel of every request of this login role (bound, not claimed).';
COMMENT ON COLUMN ledger.principals.device IS 'When set, the context.device of every request of this login role (bound, not claimed).';

-- ---------------------------------------------------------------------
-- Private completion channels.

-- One random secret per database; channel names are derived from it, so
-- they cannot be guessed from a principal's name. Readable by no role.
CREATE TABLE ledger.notify_secret (
    id     boolean PRIMARY KEY DEFAULT true,
    secret bytea   NOT NULL,
    CONSTRAINT notify_secret_one_row CHECK (id),
    CONSTRAINT notify_secret_length CHECK (octet_length(secret) >= 32)
);
COMMENT ON TABLE ledger.notify_secret IS 'Secret from which each principal''s completion channel name is derived.';
INSERT INTO ledger.notify_secret (secret)
VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- done_channel is the completion channel of a principal: "ledger_done_"
-- and 128 bits of SHA-256(secret || SHA-256(secret || principal)) in hex
-- (nested, so no length extension of one name yields another's).
CREATE FUNCTION ledger.done_channel(p_principal text) RETURNS text
LANGUAGE sql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'ledger_done_' || left(encode(sha256(s.secret || sha256(s.secret || convert_to(p_principal, 'UTF8'))), 'hex'), 32)
    FROM ledger.notify_secret s
$$;

-- notify_channel is the channel on which the caller's principal is told,
-- with the request id as payload, that one of its requests is final. NULL
-- for a login role that is not mapped to a principal.
CREATE FUNCTION ledger.notify_channel() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ledger.done_channel(ledger.current_principal())
$$;

-- legacy_done_ids reports whether ledger_request_done still carries
-- request ids, as it did before this migration: off unless an
-- administrator turns it on for the deprecation release, for listeners
-- not yet moved to notify_channel(), knowing that every role that can
-- connect then sees every principal's ids:
--   ALTER DATABASE <db> SET execledger.legacy_done_ids = on;
-- It is read in the session that notifies (an executor's, for most
-- completions); a session that sets it itself changes only what its own
-- transactions send.
CREATE FUNCTION ledger.legacy_done_ids() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(current_setting('execledger.legacy_done_ids', true), '') IN ('on', 'true', '1')
$$;

-- notify_done tells the request's principal, on its own channel, and wakes
-- the ledger_request_done listeners (with no payload, unless
-- legacy_done_ids).
CREATE FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_notify(ledger.done_channel(p_principal), p_request_id::text);
    PERFORM pg_notify('ledger_request_done', CASE WHEN ledger.legacy_done_ids() THEN p_request_id::text ELSE '' END);
END $$;

-- ---------------------------------------------------------------------
-- The SQL API, with payload-free shared notifications.

CREATE OR REPLACE FUNCTION ledger.submit(
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
        'context', context,
        'context_bound', to_json(v_bound))::text;
    v_meta := json_build_object(
        'actor', v_principal,
        'login_role', session_user,
        'correlation_id', v_id)::text;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('request:' || v_id, 1, 'tool.requested', v_payload::json, v_meta::json);

    INSERT INTO ledger.queue (id) VALUES (v_id);

    PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
    IF FOUND THEN
        PERFORM pg_notify('ledger_request_pending', '');
    END IF;
    RETURN v_id;
END $$;

-- submit with input as text: what a call with an untyped literal or
-- parameter resolves to. It parses the input itself so that JSON
-- PostgreSQL cannot take (\u0000 above all, which jsonb refuses) is a
-- ledger.submit error with a stable SQLSTATE, then submits it.
CREATE FUNCTION ledger.submit(
    tool            text,
    input           text,
    run_id          text DEFAULT NULL,
    idempotency_key text DEFAULT NULL,
    context         text DEFAULT '{}'
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

CREATE OR REPLACE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL) RETURNS boolean
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
            -- A wake-up only: executors read the flags of the claims they hold.
            PERFORM pg_notify('ledger_request_cancel', '');
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
    PERFORM ledger.notify_done(v_req.principal, request_id);
    RETURN true;
END $$;

-- decide_approval now also takes a request that no executor has claimed
-- yet (pending): an approval given early is recorded and lets the request
-- run without waiting once an executor finds it sensitive; a denial ends
-- it at once. A running or final request says so.
CREATE OR REPLACE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
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
    SELECT q.state, q.stream_version, q.approved_digest INTO v_q FROM ledger.queue q WHERE q.id = p_request_id FOR UPDATE;
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
                              'previous_state', v_q.state),
            json_build_object('actor', v_principal, 'login_role', session_user, 'correlation_id', p_request_id));
    IF p_grant THEN
        UPDATE ledger.queue
        SET state = 'pending', stream_version = stream_version + 1, approved_digest = v_req.input_digest,
            approval_expires_at = NULL,
            available_at = CASE WHEN v_q.state = 'awaiting_approval' THEN clock_timestamp() ELSE available_at END
        WHERE id = p_request_id;
        UPDATE ledger.request_status SET state = 'pending' WHERE id = p_request_id;
        IF v_q.state = 'awaiting_approval' THEN
            PERFORM 1 FROM ledger.queue_waiters LIMIT 1;
            IF FOUND THEN
                PERFORM pg_notify('ledger_request_pending', '');
            END IF;
        END IF;
    ELSE
        DELETE FROM ledger.queue WHERE id = p_request_id;
        UPDATE ledger.request_status
        SET state = 'denied', error_kind = 'approval_denied',
            error = 'approval denied by ' || v_principal || coalesce(': ' || p_note, ''), finished_at = clock_timestamp()
        WHERE id = p_request_id;
        PERFORM ledger.notify_done(v_req.principal, p_request_id);
    END IF;
END $$;

-- claim_requests now records the claiming login role beside the claim,
-- and returns which context keys an administrator bound.
DROP FUNCTION ledger.claim_requests(text, int, interval);
CREATE FUNCTION ledger.claim_requests(executor text, max_requests int, lease interval)
RETURNS TABLE (id uuid, claim_id uuid, attempt int, stream_version bigint, principal text, tool text, run_id text,
               input text, context text, context_bound text[], input_digest bytea, approved boolean, charged boolean,
               submitted_at timestamptz)
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
        SET state = 'running', claimed_by = executor, claimed_role = session_user, claim_id = gen_random_uuid(),
            attempt = q.attempt + 1, lease_expires_at = clock_timestamp() + lease,
            stream_version = q.stream_version + 1, started_at = NULL
        FROM picked WHERE q.id = picked.id
        RETURNING q.*
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'request:' || c.id, c.stream_version, 'request.claimed',
               json_build_object('request_id', c.id, 'executor', executor, 'claim_id', c.claim_id,
                                 'attempt', c.attempt, 'lease_expires_at', c.lease_expires_at),
               json_build_object('actor', executor, 'login_role', session_user, 'correlation_id', c.id)
        FROM claimed c
    )
    SELECT c.id, c.claim_id, c.attempt, c.stream_version, r.principal, r.tool, r.run_id,
           (e.payload -> 'input')::text, (e.payload -> 'context')::text,
           ARRAY(SELECT json_array_elements_text(coalesce(e.payload -> 'context_bound', '[]'::json))), r.input_digest,
           c.approved_digest IS NOT DISTINCT FROM r.input_digest, c.charged, r.submitted_at
    FROM claimed c
    JOIN ledger.request_status r ON r.id = c.id
    JOIN ledger.events e ON e.stream = 'request:' || c.id AND e.version = 1
    ORDER BY c.priority DESC, c.available_at, c.id;
END $$;

-- ---------------------------------------------------------------------
-- The event writers.

-- insert_events is append_events' body: version checks and the insert.
-- Callable only by the ledger's own functions.
ALTER FUNCTION ledger.append_events(text[], bigint[], text[], text[], text[]) RENAME TO insert_events;
ALTER FUNCTION ledger.insert_events(text[], bigint[], text[], text[], text[]) SECURITY INVOKER;
REVOKE ALL ON FUNCTION ledger.insert_events(text[], bigint[], text[], text[], text[])
    FROM PUBLIC, ledger_executor, ledger_admin;

-- append_events appends free-form events, with the same optimistic
-- concurrency, to the one stream no ledger function owns: policy (the
-- policy sets executors load). request:, run:, channel: and process:
-- streams are written only by the SQL API and the executor functions
-- below, which check who may write. Superusers (migrations, tests,
-- repairs) may write any stream.
CREATE FUNCTION ledger.append_events(
    streams   text[],
    versions  bigint[],
    types     text[],
    payloads  text[],
    metadatas text[]
) RETURNS TABLE ("position" bigint, hash bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_bad text;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user) THEN
        SELECT s INTO v_bad FROM unnest(streams) AS s
        WHERE s IS NULL OR s <> 'policy' LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'ledger.append_events: stream % is written only by the ledger''s functions', coalesce(v_bad, 'NULL')
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'executors record requests through ledger.executor_record, processes through ledger.process_start and ledger.process_record';
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM ledger.insert_events(streams, versions, types, payloads, metadatas);
END $$;

-- claim_state is the one rule for what an executor login may write about
-- a request, given the claim it acts under. A request is:
--   held          when the caller's login role holds its current claim;
--   lease_gone    when that claim (any role's) has an expired lease: any
--                 executor may rescue it;
--   approval_gone when it waited for approval past its expiry;
--   unattested    when it ended in SQL (cancelled while pending, approval
--                 denied) and has no attestation yet.
-- executor_record maps event types and state changes onto these. A set-returning SQL function without SET, so that it
-- is inlined into its callers (every one a SECURITY DEFINER function with
-- a fixed search_path); one row per distinct request id.
CREATE FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[])
RETURNS TABLE (request_id uuid, claim_id uuid, queue_state text, claimed_role name, started boolean, final boolean,
               held boolean, lease_gone boolean, approval_gone boolean, unattested boolean)
LANGUAGE sql STABLE
AS $$
    SELECT k.req, k.claim, q.state, q.claimed_role, q.started_at IS NOT NULL,
           CASE WHEN r.id IS NOT NULL THEN r.finished_at IS NOT NULL END,
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.claimed_role = session_user, false),
           coalesce(q.state = 'running' AND q.claim_id = k.claim AND q.lease_expires_at < clock_timestamp(), false),
           coalesce(q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp(), false),
           coalesce(q.id IS NULL AND r.finished_at IS NOT NULL AND r.attestation_digest IS NULL, false)
    FROM (SELECT DISTINCT ON (u.req) u.req, u.claim
          FROM unnest(request_ids, claim_ids) AS u(req, claim) ORDER BY u.req) k
    -- One primary-key lookup per request whatever the statistics say
    -- (LIMIT keeps the planner from turning these into table-wide joins).
    LEFT JOIN LATERAL (SELECT x.* FROM ledger.queue x WHERE x.id = k.req LIMIT 1) q ON true
    LEFT JOIN LATERAL (SELECT x.id, x.finished_at, x.attestation_digest FROM ledger.request_status x
                       WHERE x.id = k.req AND q.id IS NULL LIMIT 1) r ON true
$$;

-- claim_refusal says why a request in state st refuses what was asked.
CREATE FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT CASE
        WHEN st_queue_state IS NULL AND st_final IS NULL THEN 'no such request'
        WHEN st_queue_state IS NULL THEN 'it has ended'
        WHEN st_queue_state = 'running' AND st_claimed_role IS DISTINCT FROM session_user
            THEN 'its claim is held by login role ' || coalesce(st_claimed_role::text, 'none') || ' under that claim id or another'
        WHEN st_queue_state = 'running' THEN 'claim ' || coalesce(st_claim::text, 'NULL') || ' is not its current claim, or its lease has not expired'
        ELSE 'it is ' || st_queue_state
    END
$$;

-- executor_record is how an executor login records requests: in one
-- call, events about the requests it names (claim_requests, each under
-- claim_ids[i]) and, per request, the state change that follows from them
-- (kinds[i], NULL for none):
--   start          an authorized call begins (charges its run's budget when
--                  charges[i]);
--   await_approval it waits for ledger.approve, its claim released;
--   requeue        a rescued request is pending again;
--   finish         it ends in states[i] with error_kinds[i], errors[i],
--                  outputs[i], tiers[i];
--   attest         a request that ended in SQL gets its attestation.
-- Events (streams, versions, types, payloads, metadatas: as append_events)
-- go on request:<id> streams of named requests, or on channel:<name>
-- streams as channel.message on behalf of the request its metadata's
-- correlation_id names (version NULL: the stream's next). Each event type
-- and each state change needs its request in the right claim_state:
--   held:          policy.decided, budget.consumed, execution.started,
--                  approval.requested, execution.finished,
--                  request.cancelled, egress.connection, capability.used,
--                  channel.published, channel.message; start and
--                  await_approval (not yet started); finish
--   lease_gone:    lease.expired; requeue; finish
--   approval_gone: approval.denied; finish
--   unattested:    attest
--   any of these:  attestation.signed
-- A request that finishes or is attested must have as its last event in
-- the call an attestation.signed whose request_id is the request's, whose
-- attestation_digest is that of its envelope, and whose statement names
-- the request and agrees with the outcome (success, error kind);
-- ledger.requests.attestation_digest is that digest. Nothing else an
-- executor login can call writes requests.
CREATE TYPE ledger.executor_record_row AS (
    id uuid, kind text, charge boolean, state text, error_kind text, error text, output text, tier text,
    principal text, run_id text, head bigint, digest text
);

CREATE FUNCTION ledger.executor_record(
    claim_requests   uuid[],
    claim_ids        uuid[],
    streams          text[],
    versions         bigint[],
    types            text[],
    payloads         text[],
    metadatas        text[],
    kinds            text[],
    charges          boolean[],
    states           text[],
    error_kinds      text[],
    errors           text[],
    outputs          text[],
    tiers            text[],
    approval_timeout interval DEFAULT NULL
) RETURNS TABLE ("position" bigint, hash bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n      int := coalesce(cardinality(claim_requests), 0);
    m      int := coalesce(cardinality(streams), 0);
    v_vers bigint[];
    v_rows ledger.executor_record_row[];
    v_bad  uuid;
    bad    record;
BEGIN
    IF cardinality(claim_ids) IS DISTINCT FROM cardinality(claim_requests)
       OR coalesce(cardinality(versions), 0) <> m OR coalesce(cardinality(types), 0) <> m
       OR coalesce(cardinality(payloads), 0) <> m OR coalesce(cardinality(metadatas), 0) <> m
       OR coalesce(cardinality(kinds), 0) <> n OR coalesce(cardinality(charges), 0) <> n
       OR coalesce(cardinality(states), 0) <> n OR coalesce(cardinality(error_kinds), 0) <> n
       OR coalesce(cardinality(errors), 0) <> n OR coalesce(cardinality(outputs), 0) <> n
       OR coalesce(cardinality(tiers), 0) <> n THEN
        RAISE EXCEPTION 'ledger.executor_record: the per-request arrays (claim_requests, claim_ids, kinds, charges, states, error_kinds, errors, outputs, tiers) and the per-event arrays (streams, versions, types, payloads, metadatas) must each have one length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF n = 0 THEN
        IF m > 0 THEN
            RAISE EXCEPTION 'ledger.executor_record: events name no claimed request'
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN;
    END IF;
    IF (SELECT count(DISTINCT x) FROM unnest(claim_requests) AS x) <> n OR array_position(claim_requests, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.executor_record: claim_requests must be distinct and not NULL'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF approval_timeout IS NULL AND 'await_approval' = ANY(kinds) THEN
        RAISE EXCEPTION 'ledger.executor_record: await_approval needs an approval_timeout'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Lock the queue rows in id order, as claim, heartbeat and completion do.
    PERFORM 1 FROM ledger.queue q WHERE q.id = ANY(claim_requests) ORDER BY q.id FOR UPDATE;

    -- Every event and every state change against the request's claim state.
    -- An event is about the request whose stream it is on, or, on a
    -- channel, the one its correlation_id names: matched against the
    -- requests the call names, by stream name.
    WITH st AS MATERIALIZED (
        SELECT 'request:' || c.request_id AS stream, c.* FROM ledger.claim_state(claim_requests, claim_ids) c
    ), ev AS (
        SELECT u.t, u.s, u.ord,
               CASE WHEN u.s LIKE 'request:%' THEN u.s
                    WHEN u.s LIKE 'channel:%' AND u.t = 'channel.message' THEN 'request:' || (u.m::json ->> 'correlation_id')
               END AS key
        FROM unnest(streams, types, metadatas) WITH ORDINALITY AS u(s, t, m, ord)
    ), asked AS (
        SELECT ev.ord, ev.key, ev.s AS what, ev.t AS type, NULL::text AS kind FROM ev
        UNION ALL
        SELECT m + k.ord, 'request:' || k.req, 'request:' || k.req, NULL, k.kind
        FROM unnest(claim_requests, kinds) WITH ORDINALITY AS k(req, kind, ord) WHERE k.kind IS NOT NULL
    )
    SELECT a.what, a.type, a.kind, st.request_id AS req,
           CASE WHEN a.key IS NULL THEN 'executors write only request:<id> streams and channel.message events'
                WHEN st.request_id IS NULL THEN 'the call names no claim for that request'
                WHEN a.kind NOT IN ('start', 'await_approval', 'requeue', 'finish', 'attest') THEN 'unknown state change ' || a.kind
                WHEN a.type NOT IN ('policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                                    'execution.finished', 'request.cancelled', 'egress.connection', 'capability.used',
                                    'channel.published', 'channel.message', 'lease.expired', 'approval.denied',
                                    'attestation.signed') THEN 'executors do not write ' || a.type || ' events'
                WHEN a.kind IN ('start', 'await_approval') AND st.held THEN 'it has started already'
                ELSE ledger.claim_refusal(st.claim_id, st.queue_state, st.claimed_role, st.final) END AS why
    INTO bad
    FROM asked a
    LEFT JOIN st ON st.stream = a.key
    WHERE NOT coalesce(CASE
        WHEN a.type = 'lease.expired' OR a.kind = 'requeue' THEN st.lease_gone
        WHEN a.type = 'approval.denied' THEN st.approval_gone
        WHEN a.type = 'attestation.signed' THEN st.held OR st.lease_gone OR st.approval_gone OR st.unattested
        WHEN a.type IN ('policy.decided', 'budget.consumed', 'execution.started', 'approval.requested',
                        'execution.finished', 'request.cancelled', 'egress.connection', 'capability.used',
                        'channel.published', 'channel.message') THEN st.held
        WHEN a.kind IN ('start', 'await_approval') THEN st.held AND NOT st.started
        WHEN a.kind = 'finish' THEN st.held OR st.lease_gone OR st.approval_gone
        WHEN a.kind = 'attest' THEN st.unattested
        ELSE false END, false)
    ORDER BY a.ord LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.executor_record: % of request % refused: %',
            coalesce(bad.type || ' on ' || bad.what, 'state change ' || bad.kind), coalesce(bad.req::text, 'not named'), bad.why
            USING ERRCODE = 'insufficient_privilege';
    END IF;

    -- Versions: NULL is the stream's next.
    v_vers := ARRAY(
        SELECT coalesce(u.v, (SELECT coalesce(max(e.version), 0) FROM ledger.events e WHERE e.stream = u.s)
                             + row_number() OVER (PARTITION BY u.s, u.v IS NULL ORDER BY u.ord))
        FROM unnest(streams, versions) WITH ORDINALITY AS u(s, v, ord) ORDER BY u.ord);

    -- One row per request: its outcome, its new head and, for finish and
    -- attest, its attestation, parsed once.
    SELECT array_agg(ROW(k.req, k.kind, coalesce(k.charge, false), k.state, k.error_kind, k.error, k.output, k.tier,
                         r.principal, r.run_id,
                         coalesce(last.version, (SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'request:' || k.req)),
                         att.digest)::ledger.executor_record_row ORDER BY k.ord),
           (array_agg(k.req ORDER BY k.ord) FILTER (WHERE k.kind IN ('finish', 'attest') AND (
                last.type IS DISTINCT FROM 'attestation.signed' OR att.digest IS NULL
                OR (k.kind = 'finish' AND (
                    k.state IS NULL OR k.state NOT IN ('succeeded', 'failed', 'denied', 'cancelled')
                    OR (k.state = 'succeeded') <> (k.error_kind IS NULL)
                    OR att.pred ->> 'success' IS DISTINCT FROM (k.state = 'succeeded')::text
                    OR coalesce(att.pred ->> 'error_kind', '') <> coalesce(k.error_kind, ''))))))[1]
    INTO v_rows, v_bad
    FROM unnest(claim_requests, kinds, charges, states, error_kinds, errors, outputs, tiers)
        WITH ORDINALITY AS k(req, kind, charge, state, error_kind, error, output, tier, ord)
    JOIN LATERAL (SELECT x.principal, x.run_id FROM ledger.request_status x WHERE x.id = k.req LIMIT 1) r ON true
    LEFT JOIN (
        SELECT DISTINCT ON (e.s) e.s, v_vers[e.ord] AS version, e.t AS type, e.p AS payload
        FROM unnest(streams, types, payloads) WITH ORDINALITY AS e(s, t, p, ord)
        ORDER BY e.s, e.ord DESC
    ) last ON last.s = 'request:' || k.req
    LEFT JOIN LATERAL (
        SELECT CASE WHEN j.named = k.req::text AND j.pred ->> 'request_id' = k.req::text
                         AND j.digest = 'sha256:' || encode(sha256(convert_to(j.envelope, 'UTF8')), 'hex')
                    THEN j.digest END AS digest,
               j.pred
        FROM (SELECT x.pj ->> 'request_id' AS named, x.pj ->> 'attestation_digest' AS digest, x.pj ->> 'envelope' AS envelope,
                     (convert_from(decode((x.pj ->> 'envelope')::json ->> 'payload', 'base64'), 'UTF8')::jsonb) -> 'predicate' AS pred
              FROM (SELECT last.payload::jsonb AS pj OFFSET 0) x
              OFFSET 0) j
        WHERE k.kind IN ('finish', 'attest') AND last.type = 'attestation.signed'
    ) att ON true;
    IF v_bad IS NOT NULL THEN
        SELECT t.id, t.kind, t.state INTO bad FROM unnest(v_rows) t WHERE t.id = v_bad LIMIT 1;
        RAISE EXCEPTION 'ledger.executor_record: request % cannot %: its last event in the call must be an attestation.signed that names it (in the event and in its statement), carries its envelope''s digest and agrees with the outcome and error kind',
            bad.id, CASE WHEN bad.kind = 'finish' THEN 'end ' || coalesce(bad.state, 'NULL') ELSE 'be attested' END
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY SELECT * FROM ledger.insert_events(streams, v_vers, types, payloads, metadatas);

    IF 'start' = ANY(kinds) THEN
        -- Budgets: a started call is charged to its run once.
        INSERT INTO ledger.runs AS r (principal, run_id, used)
        SELECT t.principal, t.run_id, count(*)
        FROM unnest(v_rows) t JOIN ledger.queue q ON q.id = t.id
        WHERE t.kind = 'start' AND t.charge AND t.run_id IS NOT NULL AND NOT q.charged
        GROUP BY t.principal, t.run_id
        ORDER BY t.principal, t.run_id
        ON CONFLICT ON CONSTRAINT runs_pkey DO UPDATE SET used = r.used + EXCLUDED.used;

        UPDATE ledger.queue q
        SET stream_version = t.head, started_at = clock_timestamp(), charged = q.charged OR (t.charge AND t.run_id IS NOT NULL)
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'start';
    END IF;
    IF 'await_approval' = ANY(kinds) THEN
        UPDATE ledger.queue q
        SET state = 'awaiting_approval', stream_version = t.head, claim_id = NULL, claimed_by = NULL, claimed_role = NULL,
            lease_expires_at = NULL, approval_expires_at = clock_timestamp() + approval_timeout
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'await_approval';
    END IF;
    IF 'requeue' = ANY(kinds) THEN
        UPDATE ledger.queue q
        SET state = 'pending', stream_version = t.head, claim_id = NULL, claimed_by = NULL, claimed_role = NULL,
            lease_expires_at = NULL, started_at = NULL, available_at = clock_timestamp()
        FROM unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'requeue';
    END IF;
    IF 'finish' = ANY(kinds) THEN
        DELETE FROM ledger.queue q USING unnest(v_rows) t WHERE q.id = t.id AND t.kind = 'finish';
    END IF;
    UPDATE ledger.request_status r
    SET state = CASE t.kind WHEN 'start' THEN 'running' WHEN 'await_approval' THEN 'awaiting_approval'
                            WHEN 'requeue' THEN 'pending' WHEN 'finish' THEN t.state ELSE r.state END,
        error_kind = CASE WHEN t.kind = 'finish' THEN t.error_kind ELSE r.error_kind END,
        error = CASE WHEN t.kind = 'finish' THEN t.error ELSE r.error END,
        output = CASE WHEN t.kind = 'finish' THEN t.output::jsonb ELSE r.output END,
        tier = CASE WHEN t.kind = 'finish' THEN t.tier ELSE r.tier END,
        attestation_digest = CASE WHEN t.kind IN ('finish', 'attest') THEN t.digest ELSE r.attestation_digest END,
        finished_at = CASE WHEN t.kind = 'finish' THEN clock_timestamp() ELSE r.finished_at END
    FROM unnest(v_rows) t WHERE r.id = t.id AND t.kind IS NOT NULL;

    IF 'finish' = ANY(kinds) THEN
        -- One channel name per principal, not per request.
        WITH c AS MATERIALIZED (
            SELECT p.principal, ledger.done_channel(p.principal) AS channel
            FROM (SELECT DISTINCT x.principal FROM unnest(v_rows) x WHERE x.kind = 'finish') p
        )
        SELECT count(pg_notify(c.channel, t.id::text)) INTO n
        FROM unnest(v_rows) t JOIN c ON c.principal = t.principal
        WHERE t.kind = 'finish';
        IF ledger.legacy_done_ids() THEN
            PERFORM pg_notify('ledger_request_done', t.id::text) FROM unnest(v_rows) t WHERE t.kind = 'finish';
        ELSE
            PERFORM pg_notify('ledger_request_done', '');
        END IF;
    END IF;
END $$;

-- ---------------------------------------------------------------------
-- Row locks executors take, through functions (SELECT ... FOR UPDATE
-- needs UPDATE on the table, which executors no longer have).

-- lock_claims locks the queue rows of the given claims the caller still
-- holds and returns their stream heads.
CREATE FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[])
RETURNS TABLE (id uuid, stream_version bigint)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT q.id, q.stream_version FROM ledger.queue q
    JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    WHERE q.claimed_role = session_user
    ORDER BY q.id
    FOR UPDATE OF q
$$;

-- heartbeat extends the leases of the caller's claims still held and
-- returns their cancellation flags.
CREATE FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval)
RETURNS TABLE (id uuid, cancel_requested boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH held AS (
        SELECT q.id FROM ledger.queue q
        JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
        WHERE q.id = ANY(request_ids) AND q.claimed_role = session_user
        ORDER BY q.id
        FOR UPDATE OF q
    )
    UPDATE ledger.queue q SET lease_expires_at = clock_timestamp() + lease
    FROM held WHERE q.id = held.id
    RETURNING q.id, q.cancel_requested
$$;

-- lock_claimed_budgets creates the missing budget rows of the runs of the
-- requests the caller holds claims on, locks them in (principal, run_id)
-- order and returns them; max_calls is default_max where the run has no
-- budget of its own.
CREATE FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max int)
RETURNS TABLE (principal text, run_id text, max_calls int, used int, ended boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO ledger.runs AS r (principal, run_id)
    SELECT DISTINCT s.principal, s.run_id
    FROM ledger.queue q
    JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    JOIN ledger.request_status s ON s.id = q.id
    WHERE q.claimed_role = session_user AND s.run_id IS NOT NULL
    ORDER BY 1, 2
    ON CONFLICT ON CONSTRAINT runs_pkey DO NOTHING;
    RETURN QUERY
    SELECT r.principal, r.run_id, coalesce(r.max_calls, default_max), r.used, r.ended_at IS NOT NULL
    FROM ledger.runs r
    WHERE (r.principal, r.run_id) IN (
        SELECT s.principal, s.run_id
        FROM ledger.queue q
        JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
        JOIN ledger.request_status s ON s.id = q.id
        WHERE q.claimed_role = session_user)
    ORDER BY r.principal, r.run_id
    FOR UPDATE OF r;
END $$;

-- lock_expired_leases locks up to max_rows running requests whose lease
-- expired (skipping rows others hold) for the caller to rescue.
CREATE FUNCTION ledger.lock_expired_leases(max_rows int)
RETURNS TABLE (id uuid, claim_id uuid, attempt int, claimed_by text, stream_version bigint, started boolean,
               cancel_requested boolean, tool text, principal text, run_id text, input_digest bytea)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT q.id, q.claim_id, q.attempt, q.claimed_by, q.stream_version, q.started_at IS NOT NULL, q.cancel_requested,
           r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'running' AND q.lease_expires_at < clock_timestamp()
    ORDER BY q.lease_expires_at
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;

-- lock_expired_approvals locks up to max_rows requests whose wait for
-- approval expired.
CREATE FUNCTION ledger.lock_expired_approvals(max_rows int)
RETURNS TABLE (id uuid, stream_version bigint, tool text, principal text, run_id text, input_digest bytea)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT q.id, q.stream_version, r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp()
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;

-- lock_unattested locks up to max_rows requests that ended in SQL and
-- still lack an attestation.
CREATE FUNCTION ledger.lock_unattested(max_rows int)
RETURNS TABLE (id uuid, tool text, principal text, run_id text, state text, error_kind text, error text,
               input_digest bytea, submitted_at timestamptz, finished_at timestamptz, stream_version bigint)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- register_waiter / unregister_waiter: an idle executor asks submit to
-- NOTIFY ledger_request_pending (see ledger.queue_waiters).
CREATE FUNCTION ledger.register_waiter(executor text) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO ledger.queue_waiters AS w (executor) VALUES (register_waiter.executor)
    ON CONFLICT (executor) DO UPDATE SET since = clock_timestamp()
$$;

CREATE FUNCTION ledger.unregister_waiter(executor text) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM ledger.queue_waiters w WHERE w.executor = unregister_waiter.executor
$$;

-- ---------------------------------------------------------------------
-- Background processes (process.run), through functions too.
--
-- A process row and its stream process:<handle> belong to the login role
-- whose call started it (owner_role): only that role records its events
-- and end, as executors of one host share a login role to recover each
-- other's orphans. A stop is asked for by whoever holds the claim of a
-- process.stop request of the same principal and run.
ALTER TABLE ledger.processes ADD COLUMN owner_role name;
COMMENT ON COLUMN ledger.processes.owner_role IS 'Login role of the executor whose call started it; the only one that records its events.';

-- process_start records a background process a call started: the row and
-- process.started, version 1. The call's request must be running under a
-- claim of the caller's login role; the principal and run come from it,
-- and the event must name them, the request and the handle.
CREATE FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text,
    p_owner text, p_pid int, p_pid_start bigint, p_started_at timestamptz, p_expires_at timestamptz,
    p_payload text, p_metadata text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r  record;
    pj json := p_payload::json;
BEGIN
    SELECT s.principal, s.run_id INTO r
    FROM ledger.queue q JOIN ledger.request_status s ON s.id = q.id
    WHERE q.id = p_request_id AND q.state = 'running' AND q.claimed_role = session_user;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.process_start: request % is not running under a claim of login role "%"', p_request_id, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF r.run_id IS NULL THEN
        RAISE EXCEPTION 'ledger.process_start: request % has no run; a background process needs one', p_request_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (pj ->> 'handle') IS DISTINCT FROM p_handle::text OR (pj ->> 'request_id') IS DISTINCT FROM p_request_id::text
       OR (pj ->> 'principal') IS DISTINCT FROM r.principal OR (pj ->> 'run_id') IS DISTINCT FROM r.run_id THEN
        RAISE EXCEPTION 'ledger.process_start: process.started must name handle %, request %, principal % and run %',
            p_handle, p_request_id, r.principal, r.run_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.processes (handle, principal, run_id, request_id, mode, tier, command, owner, owner_role, pid, pid_start,
                                  started_at, expires_at)
    VALUES (p_handle, r.principal, r.run_id, p_request_id, p_mode, p_tier, p_command, p_owner, session_user, p_pid, p_pid_start,
            p_started_at, p_expires_at);
    PERFORM ledger.insert_events(ARRAY['process:' || p_handle], ARRAY[1::bigint], ARRAY['process.started'],
                                 ARRAY[p_payload], ARRAY[p_metadata]);
END $$;

-- process_record appends events to a process's stream and applies the
-- change they record, under the row's lock, and returns the state it
-- found. process.stop_requested needs p_stop_request: a request of the
-- process's principal and run that the caller's login role holds; it sets
-- stop_requested_at once. Every other event (egress.connection,
-- process.ended, process.lost) and p_state ('ended' or 'lost', applied
-- only to a running process, with p_end_reason, p_exit_code, p_signal,
-- p_result) needs the caller to be the process's owner_role.
CREATE FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[],
    p_stop_request uuid DEFAULT NULL, p_state text DEFAULT NULL, p_end_reason text DEFAULT NULL,
    p_exit_code int DEFAULT NULL, p_signal int DEFAULT NULL, p_result jsonb DEFAULT NULL) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p      record;
    n      int := coalesce(cardinality(types), 0);
    v_head bigint;
    v_bad  text;
BEGIN
    IF coalesce(cardinality(payloads), 0) <> n OR coalesce(cardinality(metadatas), 0) <> n THEN
        RAISE EXCEPTION 'ledger.process_record: types, payloads and metadatas must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT x.principal, x.run_id, x.state, x.owner_role, x.stop_requested_at INTO p
    FROM ledger.processes x WHERE x.handle = p_handle FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: no process %', p_handle USING ERRCODE = 'no_data_found';
    END IF;
    SELECT t INTO v_bad FROM unnest(types) AS t
    WHERE t IS NULL OR t NOT IN ('process.stop_requested', 'egress.connection', 'process.ended', 'process.lost') LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: executors do not write % events on process streams', coalesce(v_bad, 'NULL')
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF 'process.stop_requested' = ANY(types) AND NOT EXISTS (
        SELECT 1 FROM ledger.queue q JOIN ledger.request_status s ON s.id = q.id
        WHERE q.id = p_stop_request AND q.state = 'running' AND q.claimed_role = session_user
          AND s.principal = p.principal AND s.run_id = p.run_id) THEN
        RAISE EXCEPTION 'ledger.process_record: a stop of process % needs a running request of principal % and run % held by login role "%"',
            p_handle, p.principal, p.run_id, session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (p_state IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(types) AS t WHERE t <> 'process.stop_requested'))
       AND p.owner_role IS DISTINCT FROM session_user THEN
        RAISE EXCEPTION 'ledger.process_record: process % is recorded by its owner''s login role "%", not "%"',
            p_handle, coalesce(p.owner_role::text, 'none'), session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_state IS NOT NULL AND p_state NOT IN ('ended', 'lost') THEN
        RAISE EXCEPTION 'ledger.process_record: a process ends ended or lost, not %', p_state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A stop asked for twice, or of a process that has ended, records nothing.
    IF types = ARRAY['process.stop_requested'] AND (p.state <> 'running' OR p.stop_requested_at IS NOT NULL) THEN
        RETURN p.state;
    END IF;
    IF n > 0 THEN
        SELECT coalesce(max(e.version), 0) INTO v_head FROM ledger.events e WHERE e.stream = 'process:' || p_handle;
        PERFORM ledger.insert_events(array_fill('process:' || p_handle, ARRAY[n]),
                                     ARRAY(SELECT v_head + i FROM generate_series(1, n) AS i), types, payloads, metadatas);
    END IF;
    IF 'process.stop_requested' = ANY(types) AND p.stop_requested_at IS NULL THEN
        UPDATE ledger.processes SET stop_requested_at = clock_timestamp() WHERE handle = p_handle;
    END IF;
    IF p_state IS NOT NULL AND p.state = 'running' THEN
        UPDATE ledger.processes
        SET state = p_state, ended_at = clock_timestamp(), end_reason = p_end_reason, exit_code = p_exit_code,
            signal = nullif(p_signal, 0), result = p_result
        WHERE handle = p_handle;
    END IF;
    RETURN p.state;
END $$;

-- ---------------------------------------------------------------------
-- Grants: what each role may do, and no more.

REVOKE ALL ON ledger.notify_secret FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.done_channel(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.notify_done(text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.legacy_done_ids() FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.notify_channel() FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.submit(text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.append_events(text[], bigint[], text[], text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.claim_state(uuid[], uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.claim_refusal(uuid, text, name, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.executor_record(uuid[], uuid[], text[], bigint[], text[], text[], text[], text[], boolean[], text[], text[], text[], text[], text[], interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.lock_claims(uuid[], uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.heartbeat(uuid[], uuid[], interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.lock_claimed_budgets(uuid[], uuid[], int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.lock_expired_leases(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.lock_expired_approvals(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.lock_unattested(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.register_waiter(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.process_start(uuid, uuid, text, text, text, text, int, bigint, timestamptz, timestamptz, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.process_record(uuid, text[], text[], text[], uuid, text, text, int, int, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.claim_requests(text, int, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.unregister_waiter(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION ledger.notify_channel() TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.submit(text, text, text, text, text) TO ledger_submitter, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.append_events(text[], bigint[], text[], text[], text[]) TO ledger_executor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.executor_record(uuid[], uuid[], text[], bigint[], text[], text[], text[], text[], boolean[], text[], text[], text[], text[], text[], interval) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.lock_claims(uuid[], uuid[]) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.heartbeat(uuid[], uuid[], interval) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.lock_claimed_budgets(uuid[], uuid[], int) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.lock_expired_leases(int) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.lock_expired_approvals(int) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.lock_unattested(int) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.register_waiter(text) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.process_start(uuid, uuid, text, text, text, text, int, bigint, timestamptz, timestamptz, text, text) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.process_record(uuid, text[], text[], text[], uuid, text, text, int, int, jsonb) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.claim_requests(text, int, interval) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.unregister_waiter(text) TO ledger_executor;

-- Executors lose every direct write to the queue, the request read model
-- and budgets; they keep reading them.
DROP POLICY request_status_executor_update ON ledger.request_status;
REVOKE UPDATE ON ledger.request_status FROM ledger_executor;
REVOKE INSERT, UPDATE, DELETE ON ledger.runs FROM ledger_executor;
REVOKE UPDATE, DELETE ON ledger.queue FROM ledger_executor;
REVOKE INSERT, UPDATE, DELETE ON ledger.queue_waiters FROM ledger_executor;
REVOKE INSERT, UPDATE, DELETE ON ledger.processes FROM ledger_executor;
GRANT SELECT ON ledger.queue_waiters TO ledger_executor;

-- Every component checks the schema version before it starts.
GRANT SELECT ON public.execledger_schema_version
    TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;

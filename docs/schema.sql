-- Execledger schema, as `make schema` dumps it from a freshly migrated database.
-- Do not edit: change migrations/ and run `make schema`.

--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: ledger; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA ledger;


--
-- Name: SCHEMA ledger; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON SCHEMA ledger IS 'Execledger: the event log, the SQL API and the read models built from the log.';


--
-- Name: executor_record_row; Type: TYPE; Schema: ledger; Owner: -
--

CREATE TYPE ledger.executor_record_row AS (
	id uuid,
	kind text,
	charge boolean,
	state text,
	error_kind text,
	error text,
	output text,
	tier text,
	principal text,
	run_id text,
	head bigint,
	digest text
);


--
-- Name: append_events(text[], bigint[], text[], text[], text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: approve(uuid, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.approve(request_id uuid, note text DEFAULT NULL::text, input_digest text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, true, note, input_digest);
END $$;


--
-- Name: cancel(uuid, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: claim_refusal(uuid, text, name, boolean); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) RETURNS text
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


--
-- Name: claim_requests(text, integer, interval); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, stream_version bigint, principal text, tool text, run_id text, input text, context text, context_bound text[], input_digest bytea, approved boolean, charged boolean, submitted_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: claim_state(uuid[], uuid[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(request_id uuid, claim_id uuid, queue_state text, claimed_role name, started boolean, final boolean, held boolean, lease_gone boolean, approval_gone boolean, unattested boolean)
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


--
-- Name: current_principal(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.current_principal() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p.principal FROM ledger.principals p WHERE p.login_role = session_user
$$;


--
-- Name: decide_approval(uuid, boolean, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: deny_approval(uuid, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.deny_approval(request_id uuid, note text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, false, note, NULL);
END $$;


--
-- Name: done_channel(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.done_channel(p_principal text) RETURNS text
    LANGUAGE sql STABLE STRICT SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT 'ledger_done_' || left(encode(sha256(s.secret || sha256(s.secret || convert_to(p_principal, 'UTF8'))), 'hex'), 32)
    FROM ledger.notify_secret s
$$;


--
-- Name: end_run(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.end_run(run_id text, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
#variable_conflict use_column
DECLARE
    v_principal text := ledger.current_principal();
    v_version   bigint;
BEGIN
    IF v_principal IS NULL THEN
        RAISE EXCEPTION 'ledger.end_run: login role "%" is not mapped to a principal', session_user
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF run_id IS NULL OR run_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' THEN
        RAISE EXCEPTION 'ledger.end_run: run_id must be 1 to 128 characters of [A-Za-z0-9._:-], starting with a letter or digit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF reason IS NOT NULL AND length(reason) > 1000 THEN
        RAISE EXCEPTION 'ledger.end_run: reason is longer than 1000 characters'
            USING ERRCODE = 'string_data_right_truncation';
    END IF;
    INSERT INTO ledger.runs AS r (principal, run_id, version, ended_at)
    VALUES (v_principal, end_run.run_id, 1, clock_timestamp())
    ON CONFLICT (principal, run_id) DO UPDATE SET ended_at = clock_timestamp(), version = r.version + 1
        WHERE r.ended_at IS NULL
    RETURNING r.version INTO v_version;
    IF v_version IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('run:' || v_principal || '/' || end_run.run_id, v_version, 'run.ended',
            json_build_object('principal', v_principal, 'run_id', end_run.run_id, 'reason', end_run.reason),
            json_build_object('actor', v_principal, 'login_role', session_user));
    RETURN true;
END $_$;


--
-- Name: event_hash(text, bigint, text, json, json, timestamp with time zone); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.event_hash(stream text, version bigint, type text, payload json, metadata json, recorded_at timestamp with time zone) RETURNS bytea
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    s bytea := convert_to(stream, 'UTF8');
    t bytea := convert_to(type, 'UTF8');
    p bytea := convert_to(payload::text, 'UTF8');
    m bytea := convert_to(metadata::text, 'UTF8');
BEGIN
    RETURN sha256('execledger.event.v1'::bytea
        || int8send(length(s)::bigint) || s
        || int8send(version)
        || int8send(length(t)::bigint) || t
        || int8send(length(p)::bigint) || p
        || int8send(length(m)::bigint) || m
        || int8send((extract(epoch FROM recorded_at) * 1000000)::bigint));
END $$;


--
-- Name: executor_record(uuid[], uuid[], text[], bigint[], text[], text[], text[], text[], boolean[], text[], text[], text[], text[], text[], interval); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval DEFAULT NULL::interval) RETURNS TABLE("position" bigint, hash bytea)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: heartbeat(uuid[], uuid[], interval); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) RETURNS TABLE(id uuid, cancel_requested boolean)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: insert_events(text[], bigint[], text[], text[], text[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    n int := cardinality(streams);
    bad record;
BEGIN
    IF n IS NULL OR n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(versions) IS DISTINCT FROM n OR cardinality(types) IS DISTINCT FROM n
       OR cardinality(payloads) IS DISTINCT FROM n OR cardinality(metadatas) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'ledger.append_events: the five arrays must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Versions within a stream must be consecutive in the batch, and the
    -- first must follow the stream's stored head.
    SELECT b.stream, b.first, b.cnt, b.last INTO bad
    FROM (
        SELECT s AS stream, min(v) AS first, max(v) AS last, count(*) AS cnt, count(DISTINCT v) AS dcnt
        FROM unnest(streams, versions) AS u(s, v)
        GROUP BY s
    ) b
    WHERE b.first < 1
       OR b.last - b.first + 1 <> b.cnt
       OR b.dcnt <> b.cnt
       OR (b.first > 1 AND NOT EXISTS (
            SELECT 1 FROM ledger.events e WHERE e.stream = b.stream AND e.version = b.first - 1))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.append_events: stream % is not at version %', bad.stream, bad.first - 1
            USING ERRCODE = 'serialization_failure',
                  DETAIL = format('stream=%s expected_version=%s', bad.stream, bad.first - 1);
    END IF;

    RETURN QUERY
    INSERT INTO ledger.events AS e (stream, version, type, payload, metadata)
    SELECT u.s, u.v, u.t, u.p::json, u.m::json
    FROM unnest(streams, versions, types, payloads, metadatas) WITH ORDINALITY AS u(s, v, t, p, m, ord)
    ORDER BY u.ord
    RETURNING e.position, e.hash;
END $$;


--
-- Name: legacy_done_ids(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.legacy_done_ids() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce(current_setting('execledger.legacy_done_ids', true), '') IN ('on', 'true', '1')
$$;


--
-- Name: lock_claimed_budgets(uuid[], uuid[], integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) RETURNS TABLE(principal text, run_id text, max_calls integer, used integer, ended boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: lock_claims(uuid[], uuid[]); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) RETURNS TABLE(id uuid, stream_version bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT q.id, q.stream_version FROM ledger.queue q
    JOIN unnest(request_ids, claim_ids) AS u(id, claim_id) ON q.id = u.id AND q.claim_id = u.claim_id
    WHERE q.claimed_role = session_user
    ORDER BY q.id
    FOR UPDATE OF q
$$;


--
-- Name: lock_expired_approvals(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_expired_approvals(max_rows integer) RETURNS TABLE(id uuid, stream_version bigint, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT q.id, q.stream_version, r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'awaiting_approval' AND q.approval_expires_at < clock_timestamp()
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;


--
-- Name: lock_expired_leases(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_expired_leases(max_rows integer) RETURNS TABLE(id uuid, claim_id uuid, attempt integer, claimed_by text, stream_version bigint, started boolean, cancel_requested boolean, tool text, principal text, run_id text, input_digest bytea)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT q.id, q.claim_id, q.attempt, q.claimed_by, q.stream_version, q.started_at IS NOT NULL, q.cancel_requested,
           r.tool, r.principal, coalesce(r.run_id, ''), r.input_digest
    FROM ledger.queue q JOIN ledger.request_status r ON r.id = q.id
    WHERE q.state = 'running' AND q.lease_expires_at < clock_timestamp()
    ORDER BY q.lease_expires_at
    LIMIT max_rows
    FOR UPDATE OF q SKIP LOCKED
$$;


--
-- Name: lock_unattested(integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.lock_unattested(max_rows integer) RETURNS TABLE(id uuid, tool text, principal text, run_id text, state text, error_kind text, error text, input_digest bytea, submitted_at timestamp with time zone, finished_at timestamp with time zone, stream_version bigint)
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


--
-- Name: notify_channel(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.notify_channel() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT ledger.done_channel(ledger.current_principal())
$$;


--
-- Name: notify_done(text, uuid); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_notify(ledger.done_channel(p_principal), p_request_id::text);
    PERFORM pg_notify('ledger_request_done', CASE WHEN ledger.legacy_done_ids() THEN p_request_id::text ELSE '' END);
END $$;


--
-- Name: process_record(uuid, text[], text[], text[], uuid, text, text, integer, integer, jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid DEFAULT NULL::uuid, p_state text DEFAULT NULL::text, p_end_reason text DEFAULT NULL::text, p_exit_code integer DEFAULT NULL::integer, p_signal integer DEFAULT NULL::integer, p_result jsonb DEFAULT NULL::jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: process_start(uuid, uuid, text, text, text, text, integer, bigint, timestamp with time zone, timestamp with time zone, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: projection_advance(text, xid8, bigint, xid8, bigint, bigint); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF (p_to_tx, p_to_position) <= (p_from_tx, p_from_position) OR p_applied < 0 THEN
        RAISE EXCEPTION 'ledger.projection_advance: % must move forward, from (%, %) to (%, %)',
            p_name, p_from_tx, p_from_position, p_to_tx, p_to_position
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE ledger.projections p
    SET tx_id = p_to_tx, position = p_to_position, applied_total = p.applied_total + p_applied,
        updated_at = clock_timestamp()
    WHERE p.name = p_name AND p.state = 'active' AND p.tx_id = p_from_tx AND p.position = p_from_position;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_advance: % is not active at (%, %)', p_name, p_from_tx, p_from_position
            USING ERRCODE = 'serialization_failure';
    END IF;
END $$;


--
-- Name: projection_fail(text, xid8, bigint, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_p     record;
    v_error text := left(coalesce(p_error, 'unknown error'), 4000);
BEGIN
    SELECT * INTO v_p FROM ledger.projections p WHERE p.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_fail: no projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF v_p.state = 'failed' THEN
        RETURN;
    END IF;
    UPDATE ledger.projections
    SET state = 'failed', failed_tx_id = p_tx, failed_position = p_position, failed_type = p_type,
        last_error = 'failed at position ' || p_position || ': ' || v_error, updated_at = clock_timestamp()
    WHERE name = p_name;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            'projection.failed',
            json_build_object('projection', p_name, 'position', p_position, 'tx_id', p_tx::text,
                              'event_type', p_type, 'error', v_error,
                              'checkpoint', json_build_object('tx_id', v_p.tx_id::text, 'position', v_p.position)),
            json_build_object('actor', session_user, 'login_role', session_user));
END $$;


--
-- Name: projection_register(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_register(p_name text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_key int;
BEGIN
    INSERT INTO ledger.projections (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
    SELECT p.lock_key INTO STRICT v_key FROM ledger.projections p WHERE p.name = p_name;
    RETURN v_key;
END $$;


--
-- Name: projection_retry(text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.projection_retry(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_p record;
BEGIN
    SELECT * INTO v_p FROM ledger.projections p WHERE p.name = p_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_retry: no projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF v_p.state <> 'failed' THEN
        RETURN false;
    END IF;
    UPDATE ledger.projections
    SET state = 'active', failed_tx_id = NULL, failed_position = NULL, failed_type = NULL, last_error = NULL,
        updated_at = clock_timestamp()
    WHERE name = p_name;
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('projection:' || p_name,
            coalesce((SELECT max(e.version) FROM ledger.events e WHERE e.stream = 'projection:' || p_name), 0) + 1,
            'projection.retried',
            json_build_object('projection', p_name, 'position', v_p.failed_position, 'tx_id', v_p.failed_tx_id::text,
                              'previous_error', v_p.last_error, 'note', left(p_note, 1024)),
            json_build_object('actor', session_user, 'login_role', session_user));
    RETURN true;
END $$;


SET default_table_access_method = heap;

--
-- Name: events; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.events (
    "position" bigint NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    payload json NOT NULL,
    metadata json DEFAULT '{}'::json NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    hash bytea GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED NOT NULL,
    CONSTRAINT events_metadata_object CHECK ((json_typeof(metadata) = 'object'::text)),
    CONSTRAINT events_payload_object CHECK ((json_typeof(payload) = 'object'::text)),
    CONSTRAINT events_stream_check CHECK (((stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$'::text) AND (octet_length(stream) <= 300))),
    CONSTRAINT events_type_check CHECK ((type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'::text)),
    CONSTRAINT events_version_check CHECK ((version >= 1))
);


--
-- Name: TABLE events; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.events IS 'The immutable event log: the truth every read model is built from.';


--
-- Name: COLUMN events.tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events.tx_id IS 'Writing transaction; (tx_id, position) is the gapless delivery order.';


--
-- Name: COLUMN events.hash; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.events.hash IS 'ledger.event_hash over the exact stored bytes.';


--
-- Name: read_all(xid8, bigint, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) RETURNS SETOF ledger.events
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.*
    FROM ledger.events e
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;


--
-- Name: refuse_change(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'ledger.%: % is not allowed, the event log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'append a compensating event instead';
END $$;


--
-- Name: register_waiter(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.register_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO ledger.queue_waiters AS w (executor) VALUES (register_waiter.executor)
    ON CONFLICT (executor) DO UPDATE SET since = clock_timestamp()
$$;


--
-- Name: set_run_budget(text, integer); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.set_run_budget(run_id text, max_calls integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
END $_$;


--
-- Name: submit(text, jsonb, text, text, jsonb); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.submit(tool text, input jsonb, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context jsonb DEFAULT '{}'::jsonb) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
END $_$;


--
-- Name: submit(text, text, text, text, text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.submit(tool text, input text, run_id text DEFAULT NULL::text, idempotency_key text DEFAULT NULL::text, context text DEFAULT '{}'::text) RETURNS uuid
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


--
-- Name: unregister_waiter(text); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.unregister_waiter(executor text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM ledger.queue_waiters w WHERE w.executor = unregister_waiter.executor
$$;


--
-- Name: uuid_v7(); Type: FUNCTION; Schema: ledger; Owner: -
--

CREATE FUNCTION ledger.uuid_v7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
    SELECT pg_catalog.encode(
        pg_catalog.set_bit(pg_catalog.set_bit(
            pg_catalog.overlay(pg_catalog.uuid_send(pg_catalog.gen_random_uuid()),
                pg_catalog.substring(pg_catalog.int8send(pg_catalog.int8(
                    pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)), 3),
                1, 6),
            52, 1), 53, 1), 'hex')::pg_catalog.uuid
$$;


--
-- Name: events_position_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

ALTER TABLE ledger.events ALTER COLUMN "position" ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger.events_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: notify_secret; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.notify_secret (
    id boolean DEFAULT true NOT NULL,
    secret bytea NOT NULL,
    CONSTRAINT notify_secret_length CHECK ((octet_length(secret) >= 32)),
    CONSTRAINT notify_secret_one_row CHECK (id)
);


--
-- Name: TABLE notify_secret; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.notify_secret IS 'Secret from which each principal''s completion channel name is derived.';


--
-- Name: principals; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.principals (
    login_role name NOT NULL,
    principal text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    channel text,
    device text,
    CONSTRAINT principals_channel_check CHECK (((channel IS NULL) OR ((octet_length(channel) >= 1) AND (octet_length(channel) <= 256)))),
    CONSTRAINT principals_device_check CHECK (((device IS NULL) OR ((octet_length(device) >= 1) AND (octet_length(device) <= 256)))),
    CONSTRAINT principals_principal_check CHECK ((principal ~ '^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$'::text))
);


--
-- Name: TABLE principals; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.principals IS 'Maps a login role (session_user) to the principal its calls act as.';


--
-- Name: COLUMN principals.channel; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.principals.channel IS 'When set, the context.channel of every request of this login role (bound, not claimed).';


--
-- Name: COLUMN principals.device; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.principals.device IS 'When set, the context.device of every request of this login role (bound, not claimed).';


--
-- Name: processes; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.processes (
    handle uuid NOT NULL,
    principal text NOT NULL,
    run_id text NOT NULL,
    request_id uuid NOT NULL,
    mode text NOT NULL,
    tier text NOT NULL,
    command text NOT NULL,
    owner text NOT NULL,
    pid integer NOT NULL,
    pid_start bigint NOT NULL,
    state text DEFAULT 'running'::text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    stop_requested_at timestamp with time zone,
    ended_at timestamp with time zone,
    end_reason text,
    exit_code integer,
    signal integer,
    result jsonb,
    owner_role name,
    CONSTRAINT processes_ended_check CHECK (((state = 'running'::text) = (ended_at IS NULL))),
    CONSTRAINT processes_mode_check CHECK ((mode = ANY (ARRAY['run_owned'::text, 'detached'::text]))),
    CONSTRAINT processes_state_check CHECK ((state = ANY (ARRAY['running'::text, 'ended'::text, 'lost'::text])))
);


--
-- Name: TABLE processes; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.processes IS 'Background processes of process.run; derived from the process:<handle> streams.';


--
-- Name: COLUMN processes.owner_role; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.processes.owner_role IS 'Login role of the executor whose call started it; the only one that records its events.';


--
-- Name: projections; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.projections (
    name text NOT NULL,
    lock_key integer NOT NULL,
    tx_id xid8 DEFAULT '0'::xid8 NOT NULL,
    "position" bigint DEFAULT 0 NOT NULL,
    state text DEFAULT 'active'::text NOT NULL,
    applied_total bigint DEFAULT 0 NOT NULL,
    failed_tx_id xid8,
    failed_position bigint,
    failed_type text,
    last_error text,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT projections_failure_check CHECK ((((state = 'active'::text) AND (failed_tx_id IS NULL) AND (failed_position IS NULL) AND (failed_type IS NULL) AND (last_error IS NULL)) OR ((state = 'failed'::text) AND (failed_tx_id IS NOT NULL) AND (failed_position IS NOT NULL) AND (last_error IS NOT NULL)))),
    CONSTRAINT projections_name_check CHECK (((name ~ '^[a-z][a-z0-9_]*$'::text) AND (octet_length(name) <= 63))),
    CONSTRAINT projections_state_check CHECK ((state = ANY (ARRAY['active'::text, 'failed'::text])))
);


--
-- Name: TABLE projections; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.projections IS 'One row per projection: its checkpoint in ledger.read_all order and its state.';


--
-- Name: COLUMN projections.lock_key; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.lock_key IS 'Second key of the runner''s session advisory lock.';


--
-- Name: COLUMN projections.tx_id; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.tx_id IS 'Checkpoint: tx_id of the last event passed (0 before the first).';


--
-- Name: COLUMN projections."position"; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections."position" IS 'Checkpoint: position of the last event passed (0 before the first).';


--
-- Name: COLUMN projections.applied_total; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON COLUMN ledger.projections.applied_total IS 'Events handed to the projection''s apply functions and committed.';


--
-- Name: projections_lock_key_seq; Type: SEQUENCE; Schema: ledger; Owner: -
--

ALTER TABLE ledger.projections ALTER COLUMN lock_key ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME ledger.projections_lock_key_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: queue; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.queue (
    id uuid NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    available_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    claimed_by text,
    lease_expires_at timestamp with time zone,
    cancel_requested boolean DEFAULT false NOT NULL,
    claim_id uuid,
    stream_version bigint DEFAULT 1 NOT NULL,
    started_at timestamp with time zone,
    approved_digest bytea,
    approval_expires_at timestamp with time zone,
    charged boolean DEFAULT false NOT NULL,
    claimed_role name,
    CONSTRAINT queue_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'awaiting_approval'::text, 'running'::text])))
)
WITH (fillfactor='70', autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='500', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='1000', autovacuum_analyze_scale_factor='0', autovacuum_analyze_threshold='1000', autovacuum_vacuum_cost_delay='0');


--
-- Name: TABLE queue; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.queue IS 'Requests that are not final; the claim index matches the claim order.';


--
-- Name: queue_waiters; Type: TABLE; Schema: ledger; Owner: -
--

CREATE UNLOGGED TABLE ledger.queue_waiters (
    executor text NOT NULL,
    since timestamp with time zone DEFAULT clock_timestamp() NOT NULL
);


--
-- Name: TABLE queue_waiters; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.queue_waiters IS 'Idle executors asking submit to NOTIFY ledger_request_pending.';


--
-- Name: request_status; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.request_status (
    id uuid NOT NULL,
    principal text NOT NULL,
    tool text NOT NULL,
    run_id text,
    idempotency_key text,
    input_digest bytea NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    error_kind text,
    error text,
    output jsonb,
    tier text,
    attestation_digest text,
    submitted_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT request_status_error_kind_check CHECK (((error_kind IS NULL) OR (error_kind = ANY (ARRAY['invalid_input'::text, 'policy_denied'::text, 'budget_exhausted'::text, 'approval_denied'::text, 'skill_not_active'::text, 'capability_denied'::text, 'workspace_scope_denied'::text, 'egress_denied'::text, 'quota_exceeded'::text, 'timed_out'::text, 'spawn_failed'::text, 'runtime_failure'::text, 'cancelled'::text, 'outcome_unknown'::text])))),
    CONSTRAINT request_status_final_check CHECK (((state = ANY (ARRAY['succeeded'::text, 'failed'::text, 'denied'::text, 'cancelled'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT request_status_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'awaiting_approval'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'denied'::text, 'cancelled'::text])))
)
WITH (fillfactor='80');


--
-- Name: TABLE request_status; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.request_status IS 'Read model behind ledger.requests; derived from the request:<id> streams.';


--
-- Name: requests; Type: VIEW; Schema: ledger; Owner: -
--

CREATE VIEW ledger.requests WITH (security_invoker='true') AS
 SELECT r.id,
    r.principal,
    r.tool,
    r.run_id,
    r.state,
    r.error_kind,
    r.error,
    r.output,
    r.tier,
    r.attestation_digest,
    r.submitted_at,
    r.finished_at
   FROM ledger.request_status r;


--
-- Name: VIEW requests; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON VIEW ledger.requests IS 'One row per request; a submitter sees only its own principal''s rows.';


--
-- Name: runs; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.runs (
    principal text NOT NULL,
    run_id text NOT NULL,
    max_calls integer,
    used integer DEFAULT 0 NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT runs_max_calls_check CHECK (((max_calls IS NULL) OR ((max_calls >= 0) AND (max_calls <= 1000000)))),
    CONSTRAINT runs_used_check CHECK ((used >= 0))
)
WITH (fillfactor='80');


--
-- Name: TABLE runs; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.runs IS 'Per-run call budgets; derived from run.* and budget.consumed events.';


--
-- Name: skill_storage; Type: TABLE; Schema: ledger; Owner: -
--

CREATE TABLE ledger.skill_storage (
    key text NOT NULL,
    value bytea NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT skill_storage_key_check CHECK (((octet_length(key) >= 1) AND (octet_length(key) <= 512)))
);


--
-- Name: TABLE skill_storage; Type: COMMENT; Schema: ledger; Owner: -
--

COMMENT ON TABLE ledger.skill_storage IS 'Values of tier A skills'' storage capability; keys begin with the granted prefix.';


--
-- Name: execledger_schema_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.execledger_schema_version (
    version integer NOT NULL
);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (stream, version);


--
-- Name: notify_secret notify_secret_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.notify_secret
    ADD CONSTRAINT notify_secret_pkey PRIMARY KEY (id);


--
-- Name: principals principals_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.principals
    ADD CONSTRAINT principals_pkey PRIMARY KEY (login_role);


--
-- Name: processes processes_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.processes
    ADD CONSTRAINT processes_pkey PRIMARY KEY (handle);


--
-- Name: projections projections_lock_key_key; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.projections
    ADD CONSTRAINT projections_lock_key_key UNIQUE (lock_key);


--
-- Name: projections projections_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.projections
    ADD CONSTRAINT projections_pkey PRIMARY KEY (name);


--
-- Name: queue queue_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.queue
    ADD CONSTRAINT queue_pkey PRIMARY KEY (id);


--
-- Name: queue_waiters queue_waiters_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.queue_waiters
    ADD CONSTRAINT queue_waiters_pkey PRIMARY KEY (executor);


--
-- Name: request_status request_status_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.request_status
    ADD CONSTRAINT request_status_pkey PRIMARY KEY (id);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (principal, run_id);


--
-- Name: skill_storage skill_storage_pkey; Type: CONSTRAINT; Schema: ledger; Owner: -
--

ALTER TABLE ONLY ledger.skill_storage
    ADD CONSTRAINT skill_storage_pkey PRIMARY KEY (key);


--
-- Name: events_delivery_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX events_delivery_idx ON ledger.events USING btree (tx_id, "position");


--
-- Name: principals_principal_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX principals_principal_idx ON ledger.principals USING btree (principal);


--
-- Name: processes_run_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX processes_run_idx ON ledger.processes USING btree (principal, run_id);


--
-- Name: processes_running_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX processes_running_idx ON ledger.processes USING btree (owner) WHERE (state = 'running'::text);


--
-- Name: queue_approval_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_approval_idx ON ledger.queue USING btree (approval_expires_at) WHERE (state = 'awaiting_approval'::text);


--
-- Name: queue_claim_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_claim_idx ON ledger.queue USING btree (priority DESC, available_at, id) WHERE (state = 'pending'::text);


--
-- Name: queue_lease_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX queue_lease_idx ON ledger.queue USING btree (lease_expires_at) WHERE (state = 'running'::text);


--
-- Name: request_status_idempotency_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE UNIQUE INDEX request_status_idempotency_idx ON ledger.request_status USING btree (principal, idempotency_key) WHERE (idempotency_key IS NOT NULL);


--
-- Name: request_status_unattested_idx; Type: INDEX; Schema: ledger; Owner: -
--

CREATE INDEX request_status_unattested_idx ON ledger.request_status USING btree (finished_at) WHERE ((attestation_digest IS NULL) AND (finished_at IS NOT NULL));


--
-- Name: events events_no_delete; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_delete BEFORE DELETE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_delete;


--
-- Name: events events_no_truncate; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ledger.events FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_truncate;


--
-- Name: events events_no_update; Type: TRIGGER; Schema: ledger; Owner: -
--

CREATE TRIGGER events_no_update BEFORE UPDATE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_update;


--
-- Name: request_status; Type: ROW SECURITY; Schema: ledger; Owner: -
--

ALTER TABLE ledger.request_status ENABLE ROW LEVEL SECURITY;

--
-- Name: request_status request_status_all; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY request_status_all ON ledger.request_status FOR SELECT TO ledger_approver, ledger_executor, ledger_auditor, ledger_admin USING (true);


--
-- Name: request_status request_status_own; Type: POLICY; Schema: ledger; Owner: -
--

CREATE POLICY request_status_own ON ledger.request_status FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));


--
-- Name: SCHEMA ledger; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA ledger TO ledger_submitter;
GRANT USAGE ON SCHEMA ledger TO ledger_approver;
GRANT USAGE ON SCHEMA ledger TO ledger_executor;
GRANT USAGE ON SCHEMA ledger TO ledger_auditor;
GRANT USAGE ON SCHEMA ledger TO ledger_admin;


--
-- Name: FUNCTION append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.append_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) TO ledger_admin;


--
-- Name: FUNCTION approve(request_id uuid, note text, input_digest text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) TO ledger_approver;


--
-- Name: FUNCTION cancel(request_id uuid, reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_admin;


--
-- Name: FUNCTION claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_refusal(st_claim uuid, st_queue_state text, st_claimed_role name, st_final boolean) FROM PUBLIC;


--
-- Name: FUNCTION claim_requests(executor text, max_requests integer, lease interval); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.claim_requests(executor text, max_requests integer, lease interval) TO ledger_executor;


--
-- Name: FUNCTION claim_state(request_ids uuid[], claim_ids uuid[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.claim_state(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION current_principal(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.current_principal() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_approver;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.current_principal() TO ledger_admin;


--
-- Name: FUNCTION decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.decide_approval(p_request_id uuid, p_grant boolean, p_note text, p_digest text) FROM PUBLIC;


--
-- Name: FUNCTION deny_approval(request_id uuid, note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.deny_approval(request_id uuid, note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.deny_approval(request_id uuid, note text) TO ledger_approver;


--
-- Name: FUNCTION done_channel(p_principal text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.done_channel(p_principal text) FROM PUBLIC;


--
-- Name: FUNCTION end_run(run_id text, reason text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.end_run(run_id text, reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.end_run(run_id text, reason text) TO ledger_admin;


--
-- Name: FUNCTION executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.executor_record(claim_requests uuid[], claim_ids uuid[], streams text[], versions bigint[], types text[], payloads text[], metadatas text[], kinds text[], charges boolean[], states text[], error_kinds text[], errors text[], outputs text[], tiers text[], approval_timeout interval) TO ledger_executor;


--
-- Name: FUNCTION heartbeat(request_ids uuid[], claim_ids uuid[], lease interval); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.heartbeat(request_ids uuid[], claim_ids uuid[], lease interval) TO ledger_executor;


--
-- Name: FUNCTION insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;


--
-- Name: FUNCTION legacy_done_ids(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.legacy_done_ids() FROM PUBLIC;


--
-- Name: FUNCTION lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_claimed_budgets(request_ids uuid[], claim_ids uuid[], default_max integer) TO ledger_executor;


--
-- Name: FUNCTION lock_claims(request_ids uuid[], claim_ids uuid[]); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_claims(request_ids uuid[], claim_ids uuid[]) TO ledger_executor;


--
-- Name: FUNCTION lock_expired_approvals(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_expired_approvals(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_expired_approvals(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION lock_expired_leases(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_expired_leases(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_expired_leases(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION lock_unattested(max_rows integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.lock_unattested(max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.lock_unattested(max_rows integer) TO ledger_executor;


--
-- Name: FUNCTION notify_channel(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.notify_channel() FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_approver;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_executor;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.notify_channel() TO ledger_admin;


--
-- Name: FUNCTION notify_done(p_principal text, p_request_id uuid); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.notify_done(p_principal text, p_request_id uuid) FROM PUBLIC;


--
-- Name: FUNCTION process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) TO ledger_executor;


--
-- Name: FUNCTION process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) TO ledger_executor;


--
-- Name: FUNCTION projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) TO ledger_executor;


--
-- Name: FUNCTION projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) TO ledger_executor;


--
-- Name: FUNCTION projection_register(p_name text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_register(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_register(p_name text) TO ledger_executor;


--
-- Name: FUNCTION projection_retry(p_name text, p_note text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_admin;


--
-- Name: TABLE events; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.events TO ledger_auditor;
GRANT SELECT ON TABLE ledger.events TO ledger_executor;
GRANT SELECT ON TABLE ledger.events TO ledger_admin;


--
-- Name: FUNCTION read_all(after_tx xid8, after_position bigint, max_events integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_auditor;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_executor;
GRANT ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_admin;


--
-- Name: FUNCTION refuse_change(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.refuse_change() FROM PUBLIC;


--
-- Name: FUNCTION register_waiter(executor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.register_waiter(executor text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.register_waiter(executor text) TO ledger_executor;


--
-- Name: FUNCTION set_run_budget(run_id text, max_calls integer); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.set_run_budget(run_id text, max_calls integer) TO ledger_admin;


--
-- Name: FUNCTION submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.submit(tool text, input jsonb, run_id text, idempotency_key text, context jsonb) TO ledger_admin;


--
-- Name: FUNCTION submit(tool text, input text, run_id text, idempotency_key text, context text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_submitter;
GRANT ALL ON FUNCTION ledger.submit(tool text, input text, run_id text, idempotency_key text, context text) TO ledger_admin;


--
-- Name: FUNCTION unregister_waiter(executor text); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.unregister_waiter(executor text) FROM PUBLIC;
GRANT ALL ON FUNCTION ledger.unregister_waiter(executor text) TO ledger_executor;


--
-- Name: FUNCTION uuid_v7(); Type: ACL; Schema: ledger; Owner: -
--

REVOKE ALL ON FUNCTION ledger.uuid_v7() FROM PUBLIC;


--
-- Name: TABLE principals; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.principals TO ledger_auditor;
GRANT SELECT ON TABLE ledger.principals TO ledger_executor;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE ledger.principals TO ledger_admin;


--
-- Name: TABLE processes; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.processes TO ledger_executor;
GRANT SELECT ON TABLE ledger.processes TO ledger_auditor;
GRANT SELECT ON TABLE ledger.processes TO ledger_admin;


--
-- Name: TABLE projections; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.projections TO ledger_executor;
GRANT SELECT ON TABLE ledger.projections TO ledger_auditor;
GRANT SELECT ON TABLE ledger.projections TO ledger_admin;


--
-- Name: TABLE queue; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.queue TO ledger_executor;
GRANT SELECT ON TABLE ledger.queue TO ledger_auditor;
GRANT SELECT ON TABLE ledger.queue TO ledger_admin;


--
-- Name: TABLE queue_waiters; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.queue_waiters TO ledger_executor;


--
-- Name: TABLE request_status; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.request_status TO ledger_submitter;
GRANT SELECT ON TABLE ledger.request_status TO ledger_approver;
GRANT SELECT ON TABLE ledger.request_status TO ledger_executor;
GRANT SELECT ON TABLE ledger.request_status TO ledger_auditor;
GRANT SELECT ON TABLE ledger.request_status TO ledger_admin;


--
-- Name: TABLE requests; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.requests TO ledger_submitter;
GRANT SELECT ON TABLE ledger.requests TO ledger_approver;
GRANT SELECT ON TABLE ledger.requests TO ledger_executor;
GRANT SELECT ON TABLE ledger.requests TO ledger_auditor;
GRANT SELECT ON TABLE ledger.requests TO ledger_admin;


--
-- Name: TABLE runs; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT ON TABLE ledger.runs TO ledger_executor;
GRANT SELECT ON TABLE ledger.runs TO ledger_auditor;
GRANT SELECT ON TABLE ledger.runs TO ledger_admin;


--
-- Name: TABLE skill_storage; Type: ACL; Schema: ledger; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE ledger.skill_storage TO ledger_executor;
GRANT SELECT ON TABLE ledger.skill_storage TO ledger_auditor;
GRANT SELECT ON TABLE ledger.skill_storage TO ledger_admin;


--
-- Name: TABLE execledger_schema_version; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_submitter;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_approver;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_executor;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_auditor;
GRANT SELECT ON TABLE public.execledger_schema_version TO ledger_admin;


--
-- PostgreSQL database dump complete
--



-- 009: ledger.processes, the read model of the process:<handle> streams,
-- written only by its projection (see migration 8's header).
--
-- Until now process_start and process_record wrote the row from their
-- parameters next to the events, so the two could say different things
-- (the row's times were the function's clock, owner_role was in no event).
-- Now every column comes from an event: process.started carries the row's
-- first state, owner_role included (process_start writes the caller's login
-- role into it), process.stop_requested its time, process.ended and
-- process.lost the end, and both functions write the table only by
-- applying the projection over the events they have just appended.

-- apply_processes applies the events of the process:<handle> streams
-- between two read_all cursors, (from) exclusive and (to) inclusive, and
-- returns how many it consumed:
--   process.started         the row, running: handle from the stream name,
--                           the rest from the payload (started_at and
--                           expires_at as the executor measured them);
--   process.stop_requested  stop_requested_at: its recorded_at, once;
--   egress.connection       nothing (the stream's, counted);
--   process.ended/.lost     state ended/lost, ended_at its recorded_at,
--                           end_reason, exit_code, signal (0: none) from
--                           the payload, result the whole payload; only a
--                           running row ends, so an end is final;
--   process.owner_role_recorded  owner_role where process.started had none
--                           (migration 9, for processes started before it).
-- Several events of one stream in one batch apply in version order: the
-- first stop and the first end win. Across batches a row keeps the first
-- stop and end it was given, so a later event never revives an ended row.
-- Both say the same as long as read_all delivers a stream's events in
-- version order, which it does here: process_record takes the row's lock
-- before it writes anything, and a transaction gets its id (tx_id) only
-- once it holds that lock, so a stream's writers get their ids in the
-- order they append.
CREATE FUNCTION ledger.apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint)
RETURNS bigint
LANGUAGE plpgsql
SECURITY INVOKER
AS $$
DECLARE
    v ledger.events[];
BEGIN
    -- One transaction's events (the inline writers') by an index probe on
    -- tx_id; a range by read_all cursors otherwise (see migration 8).
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE e.tx_id = p_from_tx AND e.position > p_from_pos AND e.position <= p_to_pos
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;

    INSERT INTO processes (handle, principal, run_id, request_id, mode, tier, command, owner, owner_role, pid, pid_start,
                           started_at, expires_at)
    SELECT DISTINCT ON (e.stream)
           substr(e.stream, 9)::uuid, j.p ->> 'principal', j.p ->> 'run_id', (j.p ->> 'request_id')::uuid,
           j.p ->> 'mode', j.p ->> 'tier', j.p ->> 'command', j.p ->> 'owner', j.p ->> 'owner_role',
           (j.p ->> 'pid')::int, (j.p ->> 'pid_start')::bigint, (j.p ->> 'started_at')::timestamptz,
           (j.p ->> 'expires_at')::timestamptz
    FROM unnest(v) e CROSS JOIN LATERAL (SELECT e.payload::jsonb) AS j(p)
    WHERE e.type = 'process.started'
    ORDER BY e.stream, e.version
    ON CONFLICT (handle) DO NOTHING;

    UPDATE processes x
    SET stop_requested_at = s.recorded_at
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at
          FROM unnest(v) e WHERE e.type = 'process.stop_requested'
          ORDER BY e.stream, e.version) s
    WHERE x.handle = s.handle AND x.stop_requested_at IS NULL;

    UPDATE processes x
    SET state = d.state, ended_at = d.recorded_at, end_reason = d.p ->> 'end_reason',
        exit_code = (d.p ->> 'exit_code')::int, signal = nullif((d.p ->> 'signal')::int, 0), result = d.p
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at, e.payload::jsonb AS p,
                 CASE e.type WHEN 'process.ended' THEN 'ended' ELSE 'lost' END AS state
          FROM unnest(v) e WHERE e.type IN ('process.ended', 'process.lost')
          ORDER BY e.stream, e.version) d
    WHERE x.handle = d.handle AND x.state = 'running';

    UPDATE processes x
    SET owner_role = o.owner_role
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.payload ->> 'owner_role' AS owner_role
          FROM unnest(v) e WHERE e.type = 'process.owner_role_recorded'
          ORDER BY e.stream, e.version) o
    WHERE x.handle = o.handle AND x.owner_role IS NULL;

    RETURN cardinality(v);
END $$;

-- process_start records a background process a call started:
-- process.started, version 1, and the row the projection makes of it. The
-- call's request must be running under a claim of the caller's login role;
-- the principal and run come from it. The event must name them, the
-- request and the handle, and agree with every other parameter, which
-- only duplicate it; its owner_role is the caller's login role, whatever
-- the payload said (the payload is stored as jsonb renders it).
CREATE OR REPLACE FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text,
    p_owner text, p_pid int, p_pid_start bigint, p_started_at timestamptz, p_expires_at timestamptz,
    p_payload text, p_metadata text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    r       record;
    pj      jsonb;
    v_first bigint;
    v_last  bigint;
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
    pj := p_payload::jsonb;
    IF jsonb_typeof(pj) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'ledger.process_start: process.started''s payload must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (pj ->> 'handle') IS DISTINCT FROM p_handle::text OR (pj ->> 'request_id') IS DISTINCT FROM p_request_id::text
       OR (pj ->> 'principal') IS DISTINCT FROM r.principal OR (pj ->> 'run_id') IS DISTINCT FROM r.run_id THEN
        RAISE EXCEPTION 'ledger.process_start: process.started must name handle %, request %, principal % and run %',
            p_handle, p_request_id, r.principal, r.run_id
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (pj ->> 'mode') IS DISTINCT FROM p_mode OR (pj ->> 'tier') IS DISTINCT FROM p_tier
       OR (pj ->> 'command') IS DISTINCT FROM p_command OR (pj ->> 'owner') IS DISTINCT FROM p_owner
       OR (pj ->> 'pid')::int IS DISTINCT FROM p_pid OR (pj ->> 'pid_start')::bigint IS DISTINCT FROM p_pid_start
       OR (pj ->> 'started_at')::timestamptz IS DISTINCT FROM p_started_at
       OR (pj ->> 'expires_at')::timestamptz IS DISTINCT FROM p_expires_at THEN
        RAISE EXCEPTION 'ledger.process_start: process.started must say the mode, tier, command, owner, pid, pid_start, started_at and expires_at it is recorded with'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pj := jsonb_set(pj, '{owner_role}', to_jsonb(session_user::text));
    SELECT min(x."position"), max(x."position") INTO v_first, v_last
    FROM ledger.insert_events(ARRAY['process:' || p_handle], ARRAY[1::bigint], ARRAY['process.started'],
                              ARRAY[pj::text], ARRAY[p_metadata]) x;
    PERFORM ledger.apply_processes(pg_current_xact_id(), v_first - 1, pg_current_xact_id(), v_last);
END $$;

-- process_record appends events to a process's stream under the row's
-- lock, applies the projection over them, and returns the state it found.
-- process.stop_requested needs p_stop_request: a request of the process's
-- principal and run that the caller's login role holds. Every other event
-- (egress.connection, process.ended, process.lost) needs the caller to be
-- the process's owner_role. The events say how the row changes: an end is
-- process.ended or process.lost with end_reason, exit_code, signal in its
-- payload. p_state, p_end_reason, p_exit_code, p_signal and p_result only
-- duplicate the first end among the events: each that is given must agree
-- with it (p_state 'ended' or 'lost' with its type, p_result with the
-- whole payload), and none is given without an end.
CREATE OR REPLACE FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[],
    p_stop_request uuid DEFAULT NULL, p_state text DEFAULT NULL, p_end_reason text DEFAULT NULL,
    p_exit_code int DEFAULT NULL, p_signal int DEFAULT NULL, p_result jsonb DEFAULT NULL) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    p       record;
    n       int := coalesce(cardinality(types), 0);
    v_head  bigint;
    v_bad   text;
    v_end   record;
    v_first bigint;
    v_last  bigint;
BEGIN
    IF coalesce(cardinality(payloads), 0) <> n OR coalesce(cardinality(metadatas), 0) <> n THEN
        RAISE EXCEPTION 'ledger.process_record: types, payloads and metadatas must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The figures the quota read model adds up (migration 8).
    SELECT ledger.usage_refusal(u.t, u.p) INTO v_bad FROM unnest(types, payloads) AS u(t, p)
    WHERE u.t = 'egress.connection' AND ledger.usage_refusal(u.t, u.p) IS NOT NULL LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.process_record: egress.connection refused: %', v_bad
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
    SELECT u.t, u.pl::jsonb AS pl INTO v_end
    FROM unnest(types, payloads) WITH ORDINALITY AS u(t, pl, i)
    WHERE u.t IN ('process.ended', 'process.lost') ORDER BY u.i LIMIT 1;
    IF (v_end.t IS NULL AND num_nonnulls(p_state, p_end_reason, p_exit_code, nullif(p_signal, 0), p_result) > 0)
       OR (v_end.t IS NOT NULL AND (
               (p_state IS NOT NULL AND v_end.t <> 'process.' || p_state)
            OR (p_end_reason IS NOT NULL AND p_end_reason IS DISTINCT FROM v_end.pl ->> 'end_reason')
            OR (p_exit_code IS NOT NULL AND p_exit_code IS DISTINCT FROM (v_end.pl ->> 'exit_code')::int)
            OR (nullif(p_signal, 0) IS NOT NULL AND p_signal IS DISTINCT FROM (v_end.pl ->> 'signal')::int)
            OR (p_result IS NOT NULL AND p_result IS DISTINCT FROM v_end.pl))) THEN
        RAISE EXCEPTION 'ledger.process_record: the end of process % is what its process.ended or process.lost event says; the parameters disagree with the events',
            p_handle
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A stop asked for twice, or of a process that has ended, records nothing.
    IF types = ARRAY['process.stop_requested'] AND (p.state <> 'running' OR p.stop_requested_at IS NOT NULL) THEN
        RETURN p.state;
    END IF;
    IF n > 0 THEN
        SELECT coalesce(max(e.version), 0) INTO v_head FROM ledger.events e WHERE e.stream = 'process:' || p_handle;
        SELECT min(x."position"), max(x."position") INTO v_first, v_last
        FROM ledger.insert_events(array_fill('process:' || p_handle, ARRAY[n]),
                                  ARRAY(SELECT v_head + i FROM generate_series(1, n) AS i), types, payloads, metadatas) x;
        PERFORM ledger.apply_processes(pg_current_xact_id(), v_first - 1, pg_current_xact_id(), v_last);
    END IF;
    RETURN p.state;
END $$;

REVOKE ALL ON FUNCTION ledger.apply_processes(xid8, bigint, xid8, bigint) FROM PUBLIC;

INSERT INTO ledger.projections (name, mode, tables) VALUES ('processes', 'inline', ARRAY['processes'])
ON CONFLICT (name) DO UPDATE SET mode = EXCLUDED.mode, tables = EXCLUDED.tables;

-- Processes started before this migration: their process.started says no
-- owner_role, which only the row knew. Record it on their streams, then
-- make the table what the projection makes of the log.
INSERT INTO ledger.events (stream, version, type, payload, metadata)
SELECT 'process:' || x.handle, h.head + 1, 'process.owner_role_recorded',
       json_build_object('handle', x.handle, 'owner_role', x.owner_role),
       json_build_object('actor', 'migration 9', 'login_role', session_user)
FROM ledger.processes x
CROSS JOIN LATERAL (SELECT max(e.version) AS head FROM ledger.events e WHERE e.stream = 'process:' || x.handle) h
WHERE x.owner_role IS NOT NULL AND h.head IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ledger.events e
                  WHERE e.stream = 'process:' || x.handle AND e.type = 'process.started'
                    AND (e.payload::jsonb ->> 'owner_role') IS NOT NULL);

SET LOCAL search_path = pg_catalog, ledger, pg_temp;
DELETE FROM ledger.processes;
SELECT ledger.apply_processes('0', 0, max(e.tx_id), max(e."position")) FROM ledger.events e;

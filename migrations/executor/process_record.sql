-- depends: events/insert_events.sql
-- depends: executor/usage_refusal.sql
-- depends: projections/apply_processes.sql

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

CREATE OR REPLACE FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid DEFAULT NULL::uuid, p_state text DEFAULT NULL::text, p_end_reason text DEFAULT NULL::text, p_exit_code integer DEFAULT NULL::integer, p_signal integer DEFAULT NULL::integer, p_result jsonb DEFAULT NULL::jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
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

REVOKE ALL ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.process_record(p_handle uuid, types text[], payloads text[], metadatas text[], p_stop_request uuid, p_state text, p_end_reason text, p_exit_code integer, p_signal integer, p_result jsonb) TO ledger_executor;

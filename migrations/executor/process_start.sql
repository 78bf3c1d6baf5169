-- depends: events/insert_events.sql
-- depends: projections/apply_processes.sql

-- process_start records a background process a call started:
-- process.started, version 1, and the row the projection makes of it. The
-- call's request must be running under a claim of the caller's login role;
-- the principal and run come from it. The event must name them, the
-- request and the handle, and agree with every other parameter, which
-- only duplicate it; its owner_role is the caller's login role, whatever
-- the payload said (the payload is stored as jsonb renders it).

CREATE OR REPLACE FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
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

REVOKE ALL ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.process_start(p_handle uuid, p_request_id uuid, p_mode text, p_tier text, p_command text, p_owner text, p_pid integer, p_pid_start bigint, p_started_at timestamp with time zone, p_expires_at timestamp with time zone, p_payload text, p_metadata text) TO ledger_executor;

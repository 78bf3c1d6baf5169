-- depends: api/current_principal.sql
-- depends: api/notify_done.sql
-- depends: projections/apply_requests.sql

-- cancel ends a pending or awaiting request at once (request.cancelled,
-- state cancelled, NOTIFY ledger_request_done). A running request is marked
-- for cancellation, its executor told by NOTIFY ledger_request_cancel; the
-- executor stops the work and records the cancellation. Returns false when
-- the request is already final. A request the caller may not see does not
-- exist for it. request.cancelled carries the request's trace (013).
--
-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.cancel(request_id uuid, reason text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_principal text;
    v_admin     boolean;
    v_req       record;
    v_q         record;
    v_pos       bigint;
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
    SELECT q.state, q.cancel_requested, q.stream_version, q.trace_id, q.trace_span_id INTO v_q FROM ledger.queue q WHERE q.id = request_id FOR UPDATE;
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
            CASE WHEN v_q.trace_id IS NULL
                THEN json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                                       'correlation_id', request_id)
                ELSE json_build_object('actor', coalesce(v_principal, session_user::text), 'login_role', session_user,
                                       'correlation_id', request_id, 'trace_id', v_q.trace_id, 'span_id', v_q.trace_span_id) END)
    RETURNING "position" INTO v_pos;
    DELETE FROM ledger.queue WHERE id = request_id;
    PERFORM ledger.apply_requests(pg_current_xact_id(), v_pos - 1, pg_current_xact_id(), v_pos);
    PERFORM ledger.notify_done(v_req.principal, request_id);
    RETURN true;
END $$;

REVOKE ALL ON FUNCTION ledger.cancel(request_id uuid, reason text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_submitter;
GRANT EXECUTE ON FUNCTION ledger.cancel(request_id uuid, reason text) TO ledger_admin;

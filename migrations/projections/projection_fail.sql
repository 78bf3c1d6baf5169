-- projection_fail stops a projection at an event (or, for a checkpoint
-- that names no event, at its checkpoint): state failed, the event's place
-- and type, last_error 'failed at position P: <error>', and a
-- projection.failed event on stream projection:<name>, in one transaction.
-- The checkpoint stays where it is, before the failed event. A projection
-- already failed is left as it is.

CREATE OR REPLACE FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) RETURNS void
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

REVOKE ALL ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_fail(p_name text, p_tx xid8, p_position bigint, p_type text, p_error text) TO ledger_executor;

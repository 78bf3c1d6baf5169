-- projection_retry clears a failure so that the runner applies the failed
-- event again from the checkpoint, recording projection.retried. false,
-- and nothing written, when the projection is not failed.

CREATE OR REPLACE FUNCTION ledger.projection_retry(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
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

REVOKE ALL ON FUNCTION ledger.projection_retry(p_name text, p_note text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.projection_retry(p_name text, p_note text) TO ledger_admin;

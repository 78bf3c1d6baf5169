-- depends: projections/projection_batch_end.sql
-- depends: projections/projection_apply.sql

-- projection_step applies an asynchronous projection's next events, up
-- to p_max of those read_all can deliver after the checkpoint the caller
-- read, and moves the checkpoint past them, in the caller's transaction:
-- the apply and the move commit together. The checkpoint must still be
-- where the caller read it (else serialization_failure: another runner
-- moved it). It returns the new checkpoint, the events passed and those
-- the apply function consumed; no row when there is nothing to deliver.

CREATE OR REPLACE FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) RETURNS TABLE(tx_id text, "position" bigint, passed bigint, applied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_mode    text;
    v_to      record;
    n         bigint;
BEGIN
    IF p_max IS NULL OR p_max < 1 THEN
        RAISE EXCEPTION 'ledger.projection_step: p_max must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT p.mode INTO v_mode FROM ledger.projections p WHERE p.name = p_name;
    IF v_mode IS DISTINCT FROM 'async' THEN
        RAISE EXCEPTION 'ledger.projection_step: % is not an asynchronous projection', p_name
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(p_from_tx, p_from_pos, p_max) b;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- The move first: it locks the checkpoint row, so two runners never
    -- apply the same events at once.
    UPDATE ledger.projections x
    SET tx_id = v_to.tx_id, position = v_to.position, updated_at = clock_timestamp()
    WHERE x.name = p_name AND x.state = 'active' AND x.tx_id = p_from_tx AND x.position = p_from_pos;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.projection_step: % is not active at (%, %)', p_name, p_from_tx, p_from_pos
            USING ERRCODE = 'serialization_failure';
    END IF;
    n := ledger.projection_apply(p_name, p_from_tx, p_from_pos, v_to.tx_id, v_to.position);
    UPDATE ledger.projections x SET applied_total = x.applied_total + n WHERE x.name = p_name;
    RETURN QUERY SELECT v_to.tx_id::text, v_to.position, v_to.n, n;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_step(p_name text, p_from_tx xid8, p_from_pos bigint, p_max integer) TO ledger_executor;

-- projection_advance moves the checkpoint of a projection whose apply
-- functions are the caller's (Go ones, applied in the caller's
-- transaction). The ledger's own read models move only through
-- projection_step and a rebuild's swap, which apply what they pass:
-- moving theirs by hand would skip events.

CREATE OR REPLACE FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM ledger.projections p WHERE p.name = p_name AND cardinality(p.tables) > 0) THEN
        RAISE EXCEPTION 'ledger.projection_advance: % is one of the ledger''s read models; ledger.projection_step moves it', p_name
            USING ERRCODE = 'insufficient_privilege';
    END IF;
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

REVOKE ALL ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_advance(p_name text, p_from_tx xid8, p_from_position bigint, p_to_tx xid8, p_to_position bigint, p_applied bigint) TO ledger_executor;

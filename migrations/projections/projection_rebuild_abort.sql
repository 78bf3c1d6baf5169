-- projection_rebuild_abort drops a rebuild's shadow tables.

CREATE OR REPLACE FUNCTION ledger.projection_rebuild_abort(p_name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RETURN false;
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS ledger_rebuild.%I', t);
    END LOOP;
    UPDATE ledger.projections
    SET rebuild_tx_id = NULL, rebuild_position = NULL, rebuild_applied = NULL, rebuild_started_at = NULL
    WHERE name = p_name;
    RETURN true;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_rebuild_abort(p_name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_abort(p_name text) TO ledger_admin;

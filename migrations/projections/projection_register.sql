-- projection_register makes the row of a projection the first time an
-- engine runs it, and returns its lock key.

CREATE OR REPLACE FUNCTION ledger.projection_register(p_name text) RETURNS integer
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

REVOKE ALL ON FUNCTION ledger.projection_register(p_name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_register(p_name text) TO ledger_executor;

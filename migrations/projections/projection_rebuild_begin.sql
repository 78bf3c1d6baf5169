-- depends: events/archive.sql

-- The rebuild functions refuse the log: its leaves and nodes are not
-- derived state that can be thrown away and built again, they are what
-- the signed checkpoints commit to.

CREATE OR REPLACE FUNCTION ledger.projection_rebuild_begin(p_name text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR cardinality(p.tables) = 0 THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: no SQL projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF p.mode = 'sealer' THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: % is the Merkle log, which signed checkpoints commit to; it is never rebuilt', p_name
            USING ERRCODE = 'feature_not_supported', HINT = 'execledger verify --db checks it from the first leaf';
    END IF;
    PERFORM ledger.refuse_archived_rebuild('ledger.projection_rebuild_begin', p_name);
    -- Shadow tables are unlogged (a rebuild writes each row twice, once
    -- there and once in the swap), and PostgreSQL empties unlogged tables
    -- when it recovers from a crash: a rebuild begun before the server
    -- last started is begun again.
    IF p.rebuild_tx_id IS NOT NULL AND p.rebuild_started_at > pg_postmaster_start_time() AND NOT EXISTS (
        SELECT 1 FROM unnest(p.tables) x WHERE to_regclass(format('ledger_rebuild.%I', x)) IS NULL) THEN
        RETURN 'resumed';
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS ledger_rebuild.%I', t);
        EXECUTE format('CREATE UNLOGGED TABLE ledger_rebuild.%I (LIKE ledger.%I INCLUDING ALL)', t, t);
    END LOOP;
    UPDATE ledger.projections
    SET rebuild_tx_id = '0', rebuild_position = 0, rebuild_applied = 0, rebuild_started_at = clock_timestamp()
    WHERE name = p_name;
    PERFORM ledger.projection_event(p_name, 'projection.rebuild_started', json_build_object('projection', p_name));
    RETURN 'started';
END $$;

REVOKE ALL ON FUNCTION ledger.projection_rebuild_begin(p_name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_begin(p_name text) TO ledger_admin;

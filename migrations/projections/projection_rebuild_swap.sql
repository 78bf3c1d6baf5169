-- depends: projections/projection_apply.sql
-- depends: projections/projection_event.sql

-- projection_rebuild_swap brings the shadow up to date and makes it the
-- live read model in one transaction. The live tables are locked against
-- writers first (readers wait only for the copy): an inline projection
-- then takes every committed event, as the writers of any other wait for
-- the lock and apply their own after it; an asynchronous one takes what
-- read_all delivers and moves its checkpoint there, clearing a failure.

CREATE OR REPLACE FUNCTION ledger.projection_rebuild_swap(p_name text) RETURNS TABLE(tx_id text, "position" bigint, rows_copied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    p     record;
    t     text;
    v_tx  xid8;
    v_pos bigint;
    cols  text;
    n    bigint := 0;
    c    bigint;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_swap: no rebuild of % in progress', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF p.rebuild_started_at <= pg_postmaster_start_time() THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_swap: PostgreSQL restarted during the rebuild of %, whose unlogged shadow tables may have been emptied', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'run the rebuild again: it begins anew';
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        IF to_regclass(format('ledger_rebuild.%I', t)) IS NULL THEN
            RAISE EXCEPTION 'ledger.projection_rebuild_swap: shadow table ledger_rebuild.% is gone; begin the rebuild again', t
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        EXECUTE format('LOCK TABLE ledger.%I IN EXCLUSIVE MODE', t);
    END LOOP;
    IF p.mode = 'inline' THEN
        SELECT e.tx_id, e.position INTO v_tx, v_pos FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    ELSE
        SELECT e.tx_id, e.position INTO v_tx, v_pos FROM ledger.events e
        WHERE e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    END IF;
    IF v_tx IS NULL OR (v_tx, v_pos) <= (p.rebuild_tx_id, p.rebuild_position) THEN
        v_tx := p.rebuild_tx_id;
        v_pos := p.rebuild_position;
    ELSE
        PERFORM set_config('search_path', 'pg_catalog, ledger_rebuild, ledger, pg_temp', true);
        PERFORM ledger.projection_apply(p_name, p.rebuild_tx_id, p.rebuild_position, v_tx, v_pos);
        PERFORM set_config('search_path', 'pg_catalog, ledger, pg_temp', true);
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
        FROM pg_attribute a
        WHERE a.attrelid = format('ledger.%I', t)::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
        EXECUTE format('TRUNCATE ledger.%I', t);
        EXECUTE format('INSERT INTO ledger.%I (%s) SELECT %s FROM ledger_rebuild.%I', t, cols, cols, t);
        GET DIAGNOSTICS c = ROW_COUNT;
        n := n + c;
        EXECUTE format('DROP TABLE ledger_rebuild.%I', t);
    END LOOP;
    UPDATE ledger.projections x
    SET rebuild_tx_id = NULL, rebuild_position = NULL, rebuild_applied = NULL, rebuild_started_at = NULL,
        tx_id = CASE WHEN p.mode = 'async' THEN v_tx ELSE x.tx_id END,
        position = CASE WHEN p.mode = 'async' THEN v_pos ELSE x.position END,
        state = 'active', failed_tx_id = NULL, failed_position = NULL, failed_type = NULL, last_error = NULL,
        updated_at = clock_timestamp()
    WHERE x.name = p_name;
    PERFORM ledger.projection_event(p_name, 'projection.rebuilt',
        json_build_object('projection', p_name, 'tx_id', v_tx::text, 'position', v_pos, 'rows', n,
                          'started_at', p.rebuild_started_at));
    RETURN QUERY SELECT v_tx::text, v_pos, n;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_rebuild_swap(p_name text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_swap(p_name text) TO ledger_admin;

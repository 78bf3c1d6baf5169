-- depends: projections/projection_batch_end.sql
-- depends: projections/projection_apply.sql

-- projection_rebuild_step applies up to p_max delivered events after the
-- shadow's cursor to the shadow tables and returns the new cursor, the
-- events applied in all, the log's last position, and whether the shadow
-- has caught up with what read_all can deliver.

CREATE OR REPLACE FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) RETURNS TABLE(tx_id text, "position" bigint, applied bigint, head bigint, caught_up boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    p         record;
    v_to      record;
    v_count   bigint;
    n         bigint;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR p.rebuild_tx_id IS NULL THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_step: no rebuild of % in progress', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF p.rebuild_started_at <= pg_postmaster_start_time() THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_step: PostgreSQL restarted during the rebuild of %, whose unlogged shadow tables may have been emptied', p_name
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'run the rebuild again: it begins anew';
    END IF;
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(p.rebuild_tx_id, p.rebuild_position, p_max) b;
    SELECT e.position INTO head FROM ledger.events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1;
    IF v_to IS NULL THEN
        RETURN QUERY SELECT p.rebuild_tx_id::text, p.rebuild_position, p.rebuild_applied, coalesce(head, 0), true;
        RETURN;
    END IF;
    v_count := v_to.n;
    PERFORM set_config('search_path', 'pg_catalog, ledger_rebuild, ledger, pg_temp', true);
    n := ledger.projection_apply(p_name, p.rebuild_tx_id, p.rebuild_position, v_to.tx_id, v_to.position);
    PERFORM set_config('search_path', 'pg_catalog, ledger, pg_temp', true);
    UPDATE ledger.projections x
    SET rebuild_tx_id = v_to.tx_id, rebuild_position = v_to.position, rebuild_applied = x.rebuild_applied + v_count
    WHERE x.name = p_name;
    RETURN QUERY SELECT v_to.tx_id::text, v_to.position, p.rebuild_applied + v_count, coalesce(head, 0), v_count < p_max;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_rebuild_step(p_name text, p_max integer) TO ledger_admin;

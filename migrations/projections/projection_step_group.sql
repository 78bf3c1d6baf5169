-- depends: projections/projection_batch_end.sql
-- depends: projections/projection_apply.sql
-- depends: projections/projection_read.sql
-- depends: projections/projection_types.sql
-- depends: projections/apply_skill_status.sql

-- projection_step_group applies the next batch of several asynchronous
-- read models from one read of the log: the events after the furthest
-- behind of their checkpoints, up to p_max of those read_all can deliver,
-- read and parsed once (projection_read, the union of their types), each
-- read model applying those after its own checkpoint; every checkpoint
-- then moves to the batch's last event, in the caller's transaction. A
-- projection of p_names that is not active (failed, being rebuilt) or not
-- asynchronous is left out; one already at or past the batch's end is left
-- where it is. It returns a row per read model it moved: the new
-- checkpoint, the events passed after the furthest behind checkpoint and
-- those its apply function consumed; no row when there is nothing to
-- deliver. Any error rolls back every read model of the call: the caller
-- then steps them one by one (projection_step), which finds the event
-- that fails.

CREATE OR REPLACE FUNCTION ledger.projection_step_group(p_names text[], p_max integer) RETURNS TABLE(name text, tx_id text, "position" bigint, passed bigint, applied bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'ledger', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_members record;
    v_from    record;
    v_to      record;
    v_types   text[];
    v_events  ledger.projected_event[];
    m         record;
    n         bigint;
BEGIN
    IF p_max IS NULL OR p_max < 1 THEN
        RAISE EXCEPTION 'ledger.projection_step_group: p_max must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The checkpoints, locked first (in name order), so two callers never
    -- apply the same events at once.
    SELECT array_agg(p.name ORDER BY p.name) AS names INTO v_members
    FROM (SELECT x.name FROM ledger.projections x
          WHERE x.name = ANY(p_names) AND x.mode = 'async' AND x.state = 'active'
          ORDER BY x.name FOR UPDATE) p;
    IF v_members.names IS NULL THEN
        RETURN;
    END IF;
    SELECT x.tx_id, x.position INTO v_from
    FROM ledger.projections x WHERE x.name = ANY(v_members.names)
    ORDER BY x.tx_id, x.position LIMIT 1;
    SELECT b.tx_id, b.position, b.n INTO v_to FROM ledger.projection_batch_end(v_from.tx_id, v_from.position, p_max) b;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT array_agg(DISTINCT t) INTO v_types FROM unnest(v_members.names) mn, unnest(ledger.projection_types(mn)) t;
    IF 'skill_status' = ANY(v_members.names) THEN
        PERFORM ledger.skill_status_check(v_from.tx_id, v_from.position, v_to.tx_id, v_to.position);
    END IF;
    v_events := ledger.projection_read(v_from.tx_id, v_from.position, v_to.tx_id, v_to.position, coalesce(v_types, '{}'));
    FOR m IN
        SELECT x.name, x.tx_id, x.position FROM ledger.projections x
        WHERE x.name = ANY(v_members.names) AND (x.tx_id, x.position) < (v_to.tx_id, v_to.position)
        ORDER BY x.name
    LOOP
        IF (m.tx_id, m.position) = (v_from.tx_id, v_from.position) THEN
            n := ledger.projection_apply(m.name, v_events);
        ELSE
            n := ledger.projection_apply(m.name, ARRAY(SELECT e FROM unnest(v_events) e
                                                      WHERE (e.tx_id, e.position) > (m.tx_id, m.position)
                                                      ORDER BY e.tx_id, e.position));
        END IF;
        UPDATE ledger.projections x
        SET tx_id = v_to.tx_id, position = v_to.position, updated_at = clock_timestamp(), applied_total = x.applied_total + n
        WHERE x.name = m.name;
        name := m.name; tx_id := v_to.tx_id::text; position := v_to.position; passed := v_to.n; applied := n;
        RETURN NEXT;
    END LOOP;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_step_group(p_names text[], p_max integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.projection_step_group(p_names text[], p_max integer) TO ledger_executor;

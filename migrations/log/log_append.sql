-- depends: log/log_size.sql

-- log_append seals the events after the log's checkpoint (p_from) up to
-- and including p_to: they become leaves p_size, p_size + 1, … in
-- delivery order, and the nodes the caller computed for them (levels,
-- indexes, hashes: every perfect subtree the new leaves complete, the
-- leaves themselves at level 0) are stored. It moves the checkpoint and
-- returns the new size. A checkpoint or size other than the caller's is
-- SQLSTATE 40001 (another sealer moved, or the caller's state is stale);
-- a batch that is not exactly the next events delivered, or nodes that
-- are not exactly the new leaves' level-0 hashes, are refused (22023).

CREATE OR REPLACE FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    n       bigint;
    n_leaf  bigint;
    v_lo    bigint;
    v_hi    bigint;
BEGIN
    IF (p_to_tx, p_to_pos) <= (p_from_tx, p_from_pos) THEN
        RAISE EXCEPTION 'ledger.log_append: the batch must move forward, from (%, %) to (%, %)', p_from_tx, p_from_pos, p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_to_tx >= pg_snapshot_xmin(pg_current_snapshot()) THEN
        RAISE EXCEPTION 'ledger.log_append: (%, %) is not below the delivery horizon yet', p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE ledger.projections p
    SET tx_id = p_to_tx, position = p_to_pos, updated_at = clock_timestamp()
    WHERE p.name = 'log' AND p.state = 'active' AND p.tx_id = p_from_tx AND p.position = p_from_pos;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.log_append: the log is not active at (%, %)', p_from_tx, p_from_pos
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF ledger.log_size() <> p_size THEN
        RAISE EXCEPTION 'ledger.log_append: the log has % leaves, not %', ledger.log_size(), p_size
            USING ERRCODE = 'serialization_failure';
    END IF;

    INSERT INTO ledger.log_leaves (leaf_index, tx_id, "position")
    SELECT p_size - 1 + row_number() OVER (ORDER BY e.tx_id, e.position), e.tx_id, e.position
    FROM ledger.events e
    WHERE e.tx_id BETWEEN p_from_tx AND p_to_tx
      AND (e.tx_id, e.position) > (p_from_tx, p_from_pos)
      AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos);
    GET DIAGNOSTICS n = ROW_COUNT;

    IF cardinality(p_levels) IS DISTINCT FROM cardinality(p_indexes) OR cardinality(p_levels) IS DISTINCT FROM cardinality(p_hashes) THEN
        RAISE EXCEPTION 'ledger.log_append: levels, indexes and hashes must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT count(*) FILTER (WHERE u.l = 0), min(u.i) FILTER (WHERE u.l = 0), max(u.i) FILTER (WHERE u.l = 0)
    INTO n_leaf, v_lo, v_hi
    FROM unnest(p_levels, p_indexes) AS u(l, i);
    IF n = 0 OR n_leaf <> n OR v_lo <> p_size OR v_hi <> p_size + n - 1 THEN
        RAISE EXCEPTION 'ledger.log_append: % events follow (%, %) up to (%, %), the batch has % leaf hashes for leaves % to %',
            n, p_from_tx, p_from_pos, p_to_tx, p_to_pos, n_leaf, v_lo, v_hi
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.log_nodes (level, idx, hash)
    SELECT u.l, u.i, u.h FROM unnest(p_levels, p_indexes, p_hashes) AS u(l, i, h);

    UPDATE ledger.projections SET applied_total = applied_total + n WHERE name = 'log';
    RETURN p_size + n;
END $$;

REVOKE ALL ON FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint, p_levels smallint[], p_indexes bigint[], p_hashes bytea[]) TO ledger_executor;

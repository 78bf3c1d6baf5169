-- projection_batch_end is where a projection's next step ends: the last
-- of the first p_max events after (p_from_tx, p_from_pos) that read_all can
-- deliver (below the oldest running transaction), and how many they are;
-- no row when there is none. One walk of events_delivery_idx.

CREATE OR REPLACE FUNCTION ledger.projection_batch_end(p_from_tx xid8, p_from_pos bigint, p_max integer) RETURNS TABLE(tx_id xid8, "position" bigint, n bigint)
    LANGUAGE plpgsql STABLE
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.tx_id, e.position, e.n
    FROM (SELECT e.tx_id, e.position, row_number() OVER (ORDER BY e.tx_id, e.position) AS n FROM ledger.events e
          WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY e.tx_id, e.position LIMIT p_max) e
    ORDER BY e.n DESC LIMIT 1;
END $$;

REVOKE ALL ON FUNCTION ledger.projection_batch_end(p_from_tx xid8, p_from_pos bigint, p_max integer) FROM PUBLIC;

-- The readers every projection and rebuild goes through leave unsealed
-- events out: ledger.in_record, spelled out (see log/in_record.sql).
-- e.tx_id >= after_tx, implied by the row comparison, lets the planner
-- leave out the partitions of ledger.events below the cursor (024).

CREATE OR REPLACE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) RETURNS SETOF ledger.events
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.*
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id >= after_tx
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
      AND (c.c_tx IS NULL OR (e.tx_id, e.position) > (c.c_tx, c.c_pos)
           OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id))
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;

REVOKE ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_admin;

-- depends: log/in_record.sql

-- The readers every projection and rebuild goes through leave unsealed
-- events out.

CREATE OR REPLACE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) RETURNS SETOF ledger.events
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.*
    FROM ledger.events e
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
      AND ledger.in_record(e.tx_id, e.position)
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;

REVOKE ALL ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events integer) TO ledger_admin;

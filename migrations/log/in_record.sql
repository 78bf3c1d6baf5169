-- in_record says whether the event at (p_tx, p_pos) may be presented as
-- part of the record: it is a leaf, or the sealer has not passed it yet
-- (and its transaction id is one that exists). It is the definition, for
-- readers of a few rows (a stream). The planner cannot inline a function
-- with subqueries, and a call per row costs tens of microseconds, so the
-- set readers (log/unsealed_events.sql, events/read_all.sql,
-- events/events_between.sql) spell the
-- same test out: the log's cursor read once (a join of one row), a row
-- above it one comparison, a row below it one probe of
-- log_leaves_position_idx. Change them together.

CREATE OR REPLACE FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT p_tx < pg_snapshot_xmax(pg_current_snapshot())
       AND ((p_tx, p_pos) > (SELECT p.tx_id, p.position FROM ledger.projections p WHERE p.name = 'log')
            OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = p_pos AND l.tx_id = p_tx))
$$;

COMMENT ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) IS 'Whether an event may be presented as the record: a leaf, or not yet passed by the sealer.';

REVOKE ALL ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) TO ledger_admin;

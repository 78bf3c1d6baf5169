-- unsealed_events returns the rows of ledger.events that are not
-- in_record (spelled out, see log/in_record.sql): the log has passed them without making them leaves (reason
-- 'behind_sealer'), or they claim a transaction id not yet assigned
-- ('future_transaction'), in delivery order. A scan of the whole table:
-- verify --db reads every leaf anyway, the sealer runs it every
-- [sealer] audit_interval.

CREATE OR REPLACE FUNCTION ledger.unsealed_events(p_limit integer DEFAULT 1000) RETURNS TABLE(tx_id xid8, "position" bigint, stream text, version bigint, type text, recorded_at timestamp with time zone, reason text)
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.recorded_at,
           CASE WHEN e.tx_id >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'future_transaction' ELSE 'behind_sealer' END
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id >= pg_snapshot_xmax(pg_current_snapshot())
           OR ((e.tx_id, e.position) <= (c.c_tx, c.c_pos)
               AND NOT EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id)))
    ORDER BY e.tx_id, e.position
    LIMIT greatest(p_limit, 1)
$$;

COMMENT ON FUNCTION ledger.unsealed_events(p_limit integer) IS 'Events the Merkle log has passed without sealing, or that claim a future transaction id: forgeries (fault unsealed_event).';

REVOKE ALL ON FUNCTION ledger.unsealed_events(p_limit integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.unsealed_events(p_limit integer) TO ledger_admin;

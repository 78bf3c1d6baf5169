CREATE OR REPLACE FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) RETURNS SETOF ledger.projected_event
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
      AND e.tx_id >= p_from_tx AND e.tx_id <= p_to_tx AND e.type = ANY(p_types)
      AND (c.c_tx IS NULL OR (e.tx_id, e.position) > (c.c_tx, c.c_pos)
           OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id))
$$;

REVOKE ALL ON FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) FROM PUBLIC;

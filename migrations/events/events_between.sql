-- depends: log/in_record.sql

CREATE OR REPLACE FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) RETURNS SETOF ledger.projected_event
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
      AND e.tx_id >= p_from_tx AND e.tx_id <= p_to_tx AND e.type = ANY(p_types)
      AND ledger.in_record(e.tx_id, e.position)
$$;

REVOKE ALL ON FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) FROM PUBLIC;

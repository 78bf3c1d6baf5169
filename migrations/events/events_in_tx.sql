CREATE OR REPLACE FUNCTION ledger.events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[]) RETURNS SETOF ledger.projected_event
    LANGUAGE sql STABLE
    AS $$
    SELECT e.tx_id, e.position, e.stream, e.version, e.type, e.payload::jsonb, e.metadata::jsonb, e.recorded_at
    FROM ledger.events e
    WHERE e.tx_id = p_tx AND e.position > p_from_pos AND e.position <= p_to_pos AND e.type = ANY(p_types)
$$;

REVOKE ALL ON FUNCTION ledger.events_in_tx(p_tx xid8, p_from_pos bigint, p_to_pos bigint, p_types text[]) FROM PUBLIC;

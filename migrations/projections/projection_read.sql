-- depends: events/events_between.sql

-- projection_read reads the events of p_types in a range once, in
-- delivery order, each payload and metadata parsed to jsonb once.
-- events_between is a SQL function the planner inlines, and its
-- payload::jsonb with it, into every reference to the payload: an apply
-- function that read it in its own query would parse an event's JSON once
-- per field it takes. projection_step_group hands the one array to every
-- read model of the batch.

CREATE OR REPLACE FUNCTION ledger.projection_read(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) RETURNS ledger.projected_event[]
    LANGUAGE sql STABLE
    AS $$
    SELECT ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos, p_types) e
                 ORDER BY e.tx_id, e.position)
$$;

REVOKE ALL ON FUNCTION ledger.projection_read(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[]) FROM PUBLIC;

-- apply_processes applies the events of the process:<handle> streams
-- between two read_all cursors, (from) exclusive and (to) inclusive, and
-- returns how many it consumed:
--   process.started         the row, running: handle from the stream name,
--                           the rest from the payload (started_at and
--                           expires_at as the executor measured them);
--   process.stop_requested  stop_requested_at: its recorded_at, once;
--   egress.connection       nothing (the stream's, counted);
--   process.ended/.lost     state ended/lost, ended_at its recorded_at,
--                           end_reason, exit_code, signal (0: none) from
--                           the payload, result the whole payload; only a
--                           running row ends, so an end is final;
--   process.owner_role_recorded  owner_role where process.started had none
--                           (migration 9, for processes started before it).
-- Several events of one stream in one batch apply in version order: the
-- first stop and the first end win. Across batches a row keeps the first
-- stop and end it was given, so a later event never revives an ended row.
-- Both say the same as long as read_all delivers a stream's events in
-- version order, which it does here: process_record takes the row's lock
-- before it writes anything, and a transaction gets its id (tx_id) only
-- once it holds that lock, so a stream's writers get their ids in the
-- order they append.

CREATE OR REPLACE FUNCTION ledger.apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v ledger.events[];
BEGIN
    -- One transaction's events (the inline writers') by an index probe on
    -- tx_id; a range by read_all cursors otherwise (see migration 8).
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE e.tx_id = p_from_tx AND e.position > p_from_pos AND e.position <= p_to_pos
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events e
                   WHERE (e.tx_id, e.position) > (p_from_tx, p_from_pos) AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos)
                     AND e.type IN ('process.started', 'process.stop_requested', 'egress.connection', 'process.ended',
                                    'process.lost', 'process.owner_role_recorded')
                     AND e.stream LIKE 'process:%'
                   ORDER BY e.stream, e.version);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;

    INSERT INTO processes (handle, principal, run_id, request_id, mode, tier, command, owner, owner_role, pid, pid_start,
                           started_at, expires_at)
    SELECT DISTINCT ON (e.stream)
           substr(e.stream, 9)::uuid, j.p ->> 'principal', j.p ->> 'run_id', (j.p ->> 'request_id')::uuid,
           j.p ->> 'mode', j.p ->> 'tier', j.p ->> 'command', j.p ->> 'owner', j.p ->> 'owner_role',
           (j.p ->> 'pid')::int, (j.p ->> 'pid_start')::bigint, (j.p ->> 'started_at')::timestamptz,
           (j.p ->> 'expires_at')::timestamptz
    FROM unnest(v) e CROSS JOIN LATERAL (SELECT e.payload::jsonb) AS j(p)
    WHERE e.type = 'process.started'
    ORDER BY e.stream, e.version
    ON CONFLICT (handle) DO NOTHING;

    UPDATE processes x
    SET stop_requested_at = s.recorded_at
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at
          FROM unnest(v) e WHERE e.type = 'process.stop_requested'
          ORDER BY e.stream, e.version) s
    WHERE x.handle = s.handle AND x.stop_requested_at IS NULL;

    UPDATE processes x
    SET state = d.state, ended_at = d.recorded_at, end_reason = d.p ->> 'end_reason',
        exit_code = (d.p ->> 'exit_code')::int, signal = nullif((d.p ->> 'signal')::int, 0), result = d.p
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.recorded_at, e.payload::jsonb AS p,
                 CASE e.type WHEN 'process.ended' THEN 'ended' ELSE 'lost' END AS state
          FROM unnest(v) e WHERE e.type IN ('process.ended', 'process.lost')
          ORDER BY e.stream, e.version) d
    WHERE x.handle = d.handle AND x.state = 'running';

    UPDATE processes x
    SET owner_role = o.owner_role
    FROM (SELECT DISTINCT ON (e.stream) substr(e.stream, 9)::uuid AS handle, e.payload ->> 'owner_role' AS owner_role
          FROM unnest(v) e WHERE e.type = 'process.owner_role_recorded'
          ORDER BY e.stream, e.version) o
    WHERE x.handle = o.handle AND x.owner_role IS NULL;

    RETURN cardinality(v);
END $$;

REVOKE ALL ON FUNCTION ledger.apply_processes(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

-- depends: log/unsealed_events.sql

-- log_record_faults records the unsealed events not recorded yet (at most
-- 1000 a call): a row of log_faults and a log.unsealed_event on stream
-- log each, in the caller's transaction, under the log's lock (as
-- log_checkpoint, which also appends to stream log). It returns how many
-- it recorded now and how many unsealed events ledger.events holds.

CREATE OR REPLACE FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_ver bigint;
BEGIN
    PERFORM 1 FROM ledger.projections p WHERE p.name = 'log' FOR UPDATE;
    SELECT coalesce(max(e.version), 0) INTO v_ver FROM ledger.events e WHERE e.stream = 'log';
    WITH found AS MATERIALIZED (
        SELECT * FROM ledger.unsealed_events(1000)
    ), fresh AS (
        INSERT INTO ledger.log_faults (tx_id, "position", stream, version, type, reason)
        SELECT u.tx_id, u.position, u.stream, u.version, u.type, u.reason FROM found u
        ON CONFLICT DO NOTHING
        RETURNING *
    ), appended AS (
        INSERT INTO ledger.events (stream, version, type, payload, metadata)
        SELECT 'log', v_ver + row_number() OVER (ORDER BY f.tx_id, f.position), 'log.unsealed_event',
               json_build_object('tx_id', f.tx_id::text, 'position', f.position, 'stream', f.stream, 'version', f.version,
                                 'type', f.type, 'reason', f.reason),
               json_build_object('actor', session_user)
        FROM fresh f
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM appended), (SELECT count(*) FROM found) INTO recorded, present;
END $$;

REVOKE ALL ON FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint) TO ledger_executor;

-- Migration 017: no event below the sealed horizon outside the tree.
--
-- The sealer reads the log in delivery order, (tx_id, position), from its
-- cursor on, and never looks behind it again. A superuser can INSERT a row
-- into ledger.events (no trigger refuses an INSERT) whose tx_id and
-- position place it behind that cursor, among events already sealed: no
-- leaf will ever cover it, and until now readers of ledger.events did not
-- care whether a row was a leaf. Such a row is a forgery by definition: a
-- legitimate event commits in the transaction its tx_id names, and that
-- transaction ended before the sealer passed it. So is a row whose tx_id
-- no transaction has had yet (at or above the snapshot's xmax), which
-- would otherwise wait, unsealed but shown, until the counter reaches it.
--
-- From here on:
-- - ledger.unsealed_events lists such rows (verify --db and the sealer);
-- - the sealer records each it finds in ledger.log_faults and appends a
--   log.unsealed_event to stream log, which is itself sealed;
-- - ledger.in_record is the one definition of "may be presented as the
--   record"; read_all and events_between, which every projection and
--   rebuild reads through, keep only such events, so no read model is
--   built from a forgery, and so do requests show and the executor's
--   reading of the published policy (Go side); export reads leaves only.

-- in_record says whether the event at (p_tx, p_pos) may be presented as
-- part of the record: it is a leaf, or the sealer has not passed it yet
-- (and its transaction id is one that exists). It is the definition, for
-- readers of a few rows (a stream). The planner cannot inline a function
-- with subqueries, and a call per row costs tens of microseconds, so the
-- set readers below (unsealed_events, read_all, events_between) spell the
-- same test out: the log's cursor read once (a join of one row), a row
-- above it one comparison, a row below it one probe of
-- log_leaves_position_idx. Change them together.
CREATE FUNCTION ledger.in_record(p_tx xid8, p_pos bigint) RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT p_tx < pg_snapshot_xmax(pg_current_snapshot())
       AND ((p_tx, p_pos) > (SELECT p.tx_id, p.position FROM ledger.projections p WHERE p.name = 'log')
            OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = p_pos AND l.tx_id = p_tx))
$$;
COMMENT ON FUNCTION ledger.in_record(xid8, bigint) IS 'Whether an event may be presented as the record: a leaf, or not yet passed by the sealer.';

-- unsealed_events returns the rows of ledger.events that are not
-- in_record: the log has passed them without making them leaves (reason
-- 'behind_sealer'), or they claim a transaction id not yet assigned
-- ('future_transaction'), in delivery order. A scan of the whole table:
-- verify --db reads every leaf anyway, the sealer runs it every
-- [sealer] audit_interval.
CREATE FUNCTION ledger.unsealed_events(p_limit int DEFAULT 1000)
RETURNS TABLE (tx_id xid8, "position" bigint, stream text, version bigint, type text, recorded_at timestamptz, reason text)
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
COMMENT ON FUNCTION ledger.unsealed_events(int) IS 'Events the Merkle log has passed without sealing, or that claim a future transaction id: forgeries (fault unsealed_event).';

-- log_faults remembers every unsealed event the sealer found, once, also
-- after the row is gone again (a forger who deletes it later).
CREATE TABLE ledger.log_faults (
    tx_id       xid8        NOT NULL,
    "position"  bigint      NOT NULL,
    stream      text        NOT NULL,
    version     bigint      NOT NULL,
    type        text        NOT NULL,
    reason      text        NOT NULL,
    found_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT log_faults_pkey PRIMARY KEY (tx_id, "position"),
    CONSTRAINT log_faults_reason_check CHECK (reason IN ('behind_sealer', 'future_transaction'))
);
COMMENT ON TABLE ledger.log_faults IS 'Merkle log: events found in ledger.events below the sealed horizon but outside the tree (each also a log.unsealed_event).';
CREATE TRIGGER log_faults_append_only BEFORE UPDATE OR DELETE ON ledger.log_faults
    FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();
CREATE TRIGGER log_faults_no_truncate BEFORE TRUNCATE ON ledger.log_faults
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();
ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_append_only;
ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_no_truncate;

-- log_record_faults records the unsealed events not recorded yet (at most
-- 1000 a call): a row of log_faults and a log.unsealed_event on stream
-- log each, in the caller's transaction, under the log's lock (as
-- log_checkpoint, which also appends to stream log). It returns how many
-- it recorded now and how many unsealed events ledger.events holds.
CREATE FUNCTION ledger.log_record_faults(OUT recorded bigint, OUT present bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- The readers every projection and rebuild goes through leave unsealed
-- events out.
CREATE OR REPLACE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events int)
RETURNS SETOF ledger.events
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.*
    FROM ledger.events e
    LEFT JOIN (SELECT p.tx_id AS c_tx, p.position AS c_pos FROM ledger.projections p WHERE p.name = 'log') c ON true
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
      AND (c.c_tx IS NULL OR (e.tx_id, e.position) > (c.c_tx, c.c_pos)
           OR EXISTS (SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id))
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;

CREATE OR REPLACE FUNCTION ledger.events_between(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_types text[])
RETURNS SETOF ledger.projected_event
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

REVOKE ALL ON ledger.log_faults FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.in_record(xid8, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.unsealed_events(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_record_faults() FROM PUBLIC;
GRANT SELECT ON ledger.log_faults TO ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.in_record(xid8, bigint) TO ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.unsealed_events(int) TO ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.log_record_faults() TO ledger_executor;

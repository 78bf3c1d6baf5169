-- (stream, version) is unique across the partitions of ledger.events
-- (024) through ledger.stream_heads: after each statement that appends
-- events, this trigger moves every stream's head to the statement's
-- newest version, and refuses the statement when a stream's versions are
-- not consecutive or do not all lie above its head. Two transactions that
-- append the same version meet on the stream's head row: the second waits
-- for the first and, if the first commits, fails with the unique
-- violation events_pkey that a duplicate key of the unpartitioned table
-- raised (ledger.ConcurrencyError in Go). One upsert per statement, one
-- row per stream it touches: the cost measured in docs/benchmarks.md.

CREATE OR REPLACE FUNCTION ledger.advance_stream_heads() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_want int;
    v_moved int;
    v_bad record;
BEGIN
    WITH batch AS MATERIALIZED (
        SELECT n.stream, min(n.version) AS lo, max(n.version) AS hi, count(*) AS cnt, count(DISTINCT n.version) AS dcnt
        FROM new_events n GROUP BY n.stream
    ), moved AS (
        INSERT INTO ledger.stream_heads AS h (stream, version, prior)
        SELECT b.stream, b.hi, b.lo - 1 FROM batch b
        WHERE b.cnt = b.dcnt AND b.hi - b.lo + 1 = b.cnt
        ORDER BY b.stream
        ON CONFLICT (stream) DO UPDATE SET version = excluded.version, prior = excluded.prior
        WHERE h.version <= excluded.prior
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM batch), (SELECT count(*) FROM moved) INTO v_want, v_moved;
    IF v_moved = v_want THEN
        RETURN NULL;
    END IF;
    SELECT b.stream, b.lo, h.version AS head INTO v_bad
    FROM (SELECT n.stream, min(n.version) AS lo FROM new_events n GROUP BY n.stream) b
    LEFT JOIN ledger.stream_heads h ON h.stream = b.stream
    WHERE h.version IS NULL OR h.version >= b.lo OR h.prior <> b.lo - 1
    ORDER BY b.stream
    LIMIT 1;
    -- The detail is the unique index's own, which ledger.appendError reads.
    RAISE EXCEPTION 'duplicate key value violates unique constraint "events_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'events_pkey', TABLE = 'events', SCHEMA = 'ledger',
              DETAIL = format('Key (stream, version)=(%s, %s) already exists.', coalesce(v_bad.stream, '?'), coalesce(v_bad.lo::text, '?')),
              HINT = 'a stream''s versions are appended once each, consecutively, above its head (ledger.stream_heads)';
END $$;

REVOKE ALL ON FUNCTION ledger.advance_stream_heads() FROM PUBLIC;

CREATE OR REPLACE TRIGGER events_advance_stream_heads AFTER INSERT ON ledger.events REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION ledger.advance_stream_heads();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_advance_stream_heads;

-- A row removed by hand (an operator deleting a forged event with the
-- append-only trigger disabled, docs/operations.md) takes its version
-- back: each stream it touched gets its newest remaining version as its
-- head, so that the version can be appended again. A stream with no
-- event left in the database (its others archived) keeps its head.

CREATE OR REPLACE FUNCTION ledger.retreat_stream_heads() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    UPDATE ledger.stream_heads h SET version = m.v, prior = m.v
    FROM (SELECT o.stream, (SELECT max(e.version) FROM ledger.events e WHERE e.stream = o.stream) AS v
          FROM (SELECT DISTINCT d.stream FROM old_events d) o) m
    WHERE h.stream = m.stream AND m.v < h.version;
    RETURN NULL;
END $$;

REVOKE ALL ON FUNCTION ledger.retreat_stream_heads() FROM PUBLIC;

CREATE OR REPLACE TRIGGER events_retreat_stream_heads AFTER DELETE ON ledger.events REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION ledger.retreat_stream_heads();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_retreat_stream_heads;

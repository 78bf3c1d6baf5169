-- 001: the event store. Schema, roles, the immutable event log and its hash.
--
-- Every object here is owned by the migrating role. Application roles reach the
-- log only through the privileges granted at the end of this file.

DO $$
BEGIN
    IF current_setting('server_encoding') <> 'UTF8' THEN
        RAISE EXCEPTION 'execledger needs a UTF8 database, this one is %', current_setting('server_encoding');
    END IF;
END $$;

CREATE SCHEMA ledger;
COMMENT ON SCHEMA ledger IS 'Execledger: the event log, the SQL API and the read models built from the log.';
REVOKE ALL ON SCHEMA ledger FROM PUBLIC;

-- Roles are cluster-wide: several databases of one cluster share them, and
-- two databases may be migrated at the same moment, so creation tolerates a
-- role that exists already or that a concurrent migration has just created.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['ledger_submitter', 'ledger_approver', 'ledger_executor', 'ledger_auditor', 'ledger_admin'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
        EXECUTE format('GRANT USAGE ON SCHEMA ledger TO %I', r);
    END LOOP;
END $$;

-- event_hash is the one definition of an event's hash; ledger.EventHash in Go
-- computes the same bytes for offline verification. Every variable-length
-- field is length-prefixed (8-byte big-endian byte count) after a domain tag,
-- so no two different events share an encoding. recorded_at enters as
-- microseconds since the Unix epoch, the column's own precision.
-- It is plpgsql rather than SQL because a non-inlinable SQL function costs
-- about five times as much per row (convert_to is only STABLE).
CREATE FUNCTION ledger.event_hash(stream text, version bigint, type text, payload json, metadata json, recorded_at timestamptz)
RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s bytea := convert_to(stream, 'UTF8');
    t bytea := convert_to(type, 'UTF8');
    p bytea := convert_to(payload::text, 'UTF8');
    m bytea := convert_to(metadata::text, 'UTF8');
BEGIN
    RETURN sha256('execledger.event.v1'::bytea
        || int8send(length(s)::bigint) || s
        || int8send(version)
        || int8send(length(t)::bigint) || t
        || int8send(length(p)::bigint) || p
        || int8send(length(m)::bigint) || m
        || int8send((extract(epoch FROM recorded_at) * 1000000)::bigint));
END $$;

-- The log. payload and metadata are json, not jsonb: json keeps the exact
-- text it was given, so the stored bytes are the hashed bytes and an auditor
-- re-hashes them without re-serializing anything.
--
-- position comes from a sequence and so commits out of order; tx_id (the
-- writing transaction) is what readers use to deliver in a gapless order
-- (see ledger.read_all). The hash is a generated column: no writer, the table
-- owner included, can store a hash that does not match the row.
CREATE TABLE ledger.events (
    position    bigint      GENERATED ALWAYS AS IDENTITY,
    tx_id       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream      text        NOT NULL,
    version     bigint      NOT NULL,
    type        text        NOT NULL,
    payload     json        NOT NULL,
    metadata    json        NOT NULL DEFAULT '{}',
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    hash        bytea       NOT NULL GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED,
    CONSTRAINT events_pkey PRIMARY KEY (stream, version),
    CONSTRAINT events_version_check CHECK (version >= 1),
    CONSTRAINT events_stream_check CHECK (stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$' AND octet_length(stream) <= 300),
    CONSTRAINT events_type_check CHECK (type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
    CONSTRAINT events_payload_object CHECK (json_typeof(payload) = 'object'),
    CONSTRAINT events_metadata_object CHECK (json_typeof(metadata) = 'object')
);
COMMENT ON TABLE ledger.events IS 'The immutable event log: the truth every read model is built from.';
COMMENT ON COLUMN ledger.events.tx_id IS 'Writing transaction; (tx_id, position) is the gapless delivery order.';
COMMENT ON COLUMN ledger.events.hash IS 'ledger.event_hash over the exact stored bytes.';

CREATE UNIQUE INDEX events_delivery_idx ON ledger.events (tx_id, position);

-- Immutability. The triggers are ENABLE ALWAYS so that a session with
-- session_replication_role = replica does not slip past them either; only
-- dropping or disabling a trigger (DDL, which the Merkle log exposes) does.
CREATE FUNCTION ledger.refuse_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'ledger.%: % is not allowed, the event log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'append a compensating event instead';
END $$;

CREATE TRIGGER events_no_update BEFORE UPDATE ON ledger.events
    FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();
CREATE TRIGGER events_no_delete BEFORE DELETE ON ledger.events
    FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ledger.events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();
ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_update;
ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_delete;
ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_truncate;

-- append_events writes a batch of events, possibly to several streams, with
-- optimistic concurrency: each event carries the version it must get, and a
-- stream's first event in the batch must directly follow the stream's current
-- head (or start it at 1). A lost race surfaces as a unique violation on
-- events_pkey, a gap as SQLSTATE 40001 with the stream named; the Go side
-- turns both into ledger.ConcurrencyError. It returns the new rows' positions
-- and hashes in input order.
CREATE FUNCTION ledger.append_events(
    streams   text[],
    versions  bigint[],
    types     text[],
    payloads  text[],
    metadatas text[]
) RETURNS TABLE ("position" bigint, hash bytea)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n int := cardinality(streams);
    bad record;
BEGIN
    IF n IS NULL OR n = 0 THEN
        RETURN;
    END IF;
    IF cardinality(versions) IS DISTINCT FROM n OR cardinality(types) IS DISTINCT FROM n
       OR cardinality(payloads) IS DISTINCT FROM n OR cardinality(metadatas) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'ledger.append_events: the five arrays must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- Versions within a stream must be consecutive in the batch, and the
    -- first must follow the stream's stored head.
    SELECT b.stream, b.first, b.cnt, b.last INTO bad
    FROM (
        SELECT s AS stream, min(v) AS first, max(v) AS last, count(*) AS cnt, count(DISTINCT v) AS dcnt
        FROM unnest(streams, versions) AS u(s, v)
        GROUP BY s
    ) b
    WHERE b.first < 1
       OR b.last - b.first + 1 <> b.cnt
       OR b.dcnt <> b.cnt
       OR (b.first > 1 AND NOT EXISTS (
            SELECT 1 FROM ledger.events e WHERE e.stream = b.stream AND e.version = b.first - 1))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.append_events: stream % is not at version %', bad.stream, bad.first - 1
            USING ERRCODE = 'serialization_failure',
                  DETAIL = format('stream=%s expected_version=%s', bad.stream, bad.first - 1);
    END IF;

    RETURN QUERY
    INSERT INTO ledger.events AS e (stream, version, type, payload, metadata)
    SELECT u.s, u.v, u.t, u.p::json, u.m::json
    FROM unnest(streams, versions, types, payloads, metadatas) WITH ORDINALITY AS u(s, v, t, p, m, ord)
    ORDER BY u.ord
    RETURNING e.position, e.hash;
END $$;

-- read_all delivers committed events after the cursor (after_tx, after_position)
-- in (tx_id, position) order, never past the oldest transaction still running
-- anywhere in the cluster. Every transaction below that horizon has ended, so
-- no event can later appear before a cursor a reader has passed: the order
-- is total, stable and gapless, even though positions commit out of order.
CREATE FUNCTION ledger.read_all(after_tx xid8, after_position bigint, max_events int)
RETURNS SETOF ledger.events
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.*
    FROM ledger.events e
    WHERE (e.tx_id, e.position) > (after_tx, after_position)
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx_id, e.position
    LIMIT max_events
$$;

REVOKE ALL ON ledger.events FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.append_events(text[], bigint[], text[], text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.read_all(xid8, bigint, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.refuse_change() FROM PUBLIC;
GRANT SELECT ON ledger.events TO ledger_auditor, ledger_executor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.read_all(xid8, bigint, int) TO ledger_auditor, ledger_executor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.append_events(text[], bigint[], text[], text[], text[]) TO ledger_executor, ledger_admin;

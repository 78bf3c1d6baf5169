-- SET enable_seqscan (014): its plans are index probes whatever size the
-- tables had when they were made; CREATE OR REPLACE resets SET clauses,
-- so the clause lives here, in the CREATE.

CREATE OR REPLACE FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) RETURNS TABLE("position" bigint, hash bytea, recorded_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
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
    LEFT JOIN LATERAL (
        SELECT true AS found FROM ledger.events e
        WHERE e.stream = b.stream AND e.version = b.first - 1
        LIMIT 1
    ) head ON b.first > 1
    WHERE b.first < 1
       OR b.last - b.first + 1 <> b.cnt
       OR b.dcnt <> b.cnt
       OR (b.first > 1 AND head.found IS NULL)
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
    RETURNING e.position, e.hash, e.recorded_at;
END $$;

REVOKE ALL ON FUNCTION ledger.insert_events(streams text[], versions bigint[], types text[], payloads text[], metadatas text[]) FROM PUBLIC;

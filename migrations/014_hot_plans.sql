-- Migration 014: the event writers' version check is an index probe
-- whatever the statistics say (issue 15).
--
-- insert_events, the body of every event write (ledger.append_events,
-- ledger.executor_record, the process writers), checked that a batch's
-- first version of a stream follows the stream's stored head with
--   ... OR (b.first > 1 AND NOT EXISTS (SELECT 1 FROM ledger.events e
--                                       WHERE e.stream = b.stream AND e.version = b.first - 1))
-- Inside an OR the sublink stays a subplan, and PostgreSQL may plan it
-- hashed: read all of ledger.events once into a hash table, then probe it.
-- With the statistics of an empty or young log that looks cheapest, and
-- PL/pgSQL keeps the plan for the session. Where nothing re-analyzes the
-- table (autovacuum off, as on CI machines, or lagging behind a burst),
-- every write then read the whole log: on a fresh database at 300 echo/s,
-- p50 submit to final went from ~40 ms to 217-504 ms within 90 s.
--
-- A LATERAL subquery with LIMIT is never turned into a join or a hashed
-- subplan: it runs once per stream of the batch. And enable_seqscan off,
-- for this function only, makes that run a probe of the (stream, version)
-- unique index even in a plan made while the log was small: PL/pgSQL keeps
-- a session's plans until the statistics change, so a plan chosen for an
-- empty log would otherwise scan the whole log at every call for as long
-- as the connection lives. Nothing in this function should ever scan the
-- log.

CREATE OR REPLACE FUNCTION ledger.insert_events(
    streams   text[],
    versions  bigint[],
    types     text[],
    payloads  text[],
    metadatas text[]
) RETURNS TABLE ("position" bigint, hash bytea)
LANGUAGE plpgsql
SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
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
    RETURNING e.position, e.hash;
END $$;

-- The same holds for every statement of the hot path: PL/pgSQL and SQL
-- functions keep a session's plans, and a plan made while a table was
-- small reads the whole table for as long as the session lives (the test
-- executor.TestHotPlansIgnoreStatistics found it in the claim, the
-- completion and submit: sequential scans of ledger.request_status and
-- ledger.events under generic plans from an empty database). Each of
-- these functions looks rows up by key; enable_seqscan off makes their
-- plans index probes whatever size the tables had when the plans were
-- made. It is set per function (for the statements inside it and the
-- functions it calls), never for a session: the projections' and the
-- sealer's range reads are theirs to plan. ledger.claim_state is left
-- alone, on purpose: a SET would stop it being inlined, and its callers
-- below carry the setting into it.
ALTER FUNCTION ledger.submit(text, jsonb, text, text, jsonb) SET enable_seqscan = off;
ALTER FUNCTION ledger.cancel(uuid, text) SET enable_seqscan = off;
ALTER FUNCTION ledger.decide_approval(uuid, boolean, text, text) SET enable_seqscan = off;
ALTER FUNCTION ledger.claim_requests(text, integer, interval) SET enable_seqscan = off;
ALTER FUNCTION ledger.executor_record(uuid[], uuid[], text[], bigint[], text[], text[], text[], text[], boolean[],
                                      text[], text[], text[], text[], text[], interval) SET enable_seqscan = off;
ALTER FUNCTION ledger.lock_claims(uuid[], uuid[]) SET enable_seqscan = off;
ALTER FUNCTION ledger.heartbeat(uuid[], uuid[], interval) SET enable_seqscan = off;
ALTER FUNCTION ledger.lock_claimed_budgets(uuid[], uuid[], integer) SET enable_seqscan = off;
ALTER FUNCTION ledger.lock_expired_leases(integer) SET enable_seqscan = off;
ALTER FUNCTION ledger.lock_expired_approvals(integer) SET enable_seqscan = off;
-- done_channel reads the one-row notify_secret; its callers above hand
-- it enable_seqscan off, under which each call cost ~29 ms (measured: 1,000
-- calls took 29 s against 6 ms), so it plans its own way.
ALTER FUNCTION ledger.done_channel(text) SET enable_seqscan = on;

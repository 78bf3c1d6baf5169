-- depends: events/events_between.sql
-- depends: events/events_in_tx.sql

-- runs: ledger.runs (budgets), from run:<principal>/<run_id> streams
-- (run.budget_set, run.ended) and budget.consumed, or request.decided
-- with a budget member (021). The principal and run
-- of a budget.consumed are its request's, read from tool.requested, never
-- from the event itself.

CREATE OR REPLACE FUNCTION ledger.apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    n bigint;
    v ledger.projected_event[];
BEGIN
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events_in_tx(p_from_tx, p_from_pos, p_to_pos,
                                                     ARRAY['run.budget_set', 'run.ended', 'budget.consumed', 'request.decided']) e
                   WHERE e.type <> 'request.decided' OR e.payload ? 'budget');
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                       ARRAY['run.budget_set', 'run.ended', 'budget.consumed', 'request.decided']) e
                   WHERE e.type <> 'request.decided' OR e.payload ? 'budget');
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;
    WITH ev AS MATERIALIZED (
        SELECT CASE WHEN e.type = 'request.decided' THEN 'budget.consumed' ELSE e.type END AS type, e.version, e.recorded_at,
               CASE WHEN e.type IN ('budget.consumed', 'request.decided') THEN r.payload ->> 'principal' ELSE e.payload ->> 'principal' END AS principal,
               CASE WHEN e.type IN ('budget.consumed', 'request.decided') THEN r.payload ->> 'run_id' ELSE e.payload ->> 'run_id' END AS run_id,
               (e.payload ->> 'max_calls')::int AS max_calls
        FROM unnest(v) e
        -- A lateral probe of (stream, version = 1): a join may keep a plan
        -- that reads every stream's first event.
        LEFT JOIN LATERAL (SELECT r.payload FROM ledger.events r
                           WHERE e.type IN ('budget.consumed', 'request.decided') AND r.stream = e.stream AND r.version = 1
                           LIMIT 1) r ON true
        WHERE (e.type IN ('budget.consumed', 'request.decided') AND e.stream LIKE 'request:%')
           OR (e.type NOT IN ('budget.consumed', 'request.decided') AND e.stream = 'run:' || (e.payload ->> 'principal') || '/' || (e.payload ->> 'run_id'))
    ), agg AS (
        SELECT principal, run_id,
               (array_agg(max_calls ORDER BY version DESC) FILTER (WHERE type = 'run.budget_set'))[1] AS max_calls,
               count(*) FILTER (WHERE type = 'budget.consumed') AS used,
               coalesce(max(version) FILTER (WHERE type <> 'budget.consumed'), 0) AS version,
               min(recorded_at) AS created_at,
               min(recorded_at) FILTER (WHERE type = 'run.ended') AS ended_at,
               count(*) AS events
        FROM ev WHERE principal IS NOT NULL AND run_id IS NOT NULL
        GROUP BY principal, run_id
    ), up AS (
        INSERT INTO runs AS x (principal, run_id, max_calls, used, version, created_at, ended_at)
        SELECT principal, run_id, max_calls, used, version, created_at, ended_at FROM agg
        ORDER BY principal, run_id
        ON CONFLICT (principal, run_id) DO UPDATE
        SET max_calls = coalesce(EXCLUDED.max_calls, x.max_calls),
            used = x.used + EXCLUDED.used,
            version = greatest(x.version, EXCLUDED.version),
            created_at = least(x.created_at, EXCLUDED.created_at),
            ended_at = coalesce(least(x.ended_at, EXCLUDED.ended_at), x.ended_at, EXCLUDED.ended_at)
        RETURNING 1
    )
    SELECT coalesce(sum(agg.events), 0) + 0 * (SELECT count(*) FROM up) INTO n FROM agg;
    RETURN n;
END $$;

REVOKE ALL ON FUNCTION ledger.apply_runs(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

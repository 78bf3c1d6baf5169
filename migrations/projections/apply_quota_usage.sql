-- depends: projections/projection_read.sql
-- depends: projections/projection_types.sql

-- quota_usage and its per-run, per-reason and per-bucket tables, in either
-- grammar (021): request.decided counts as policy.decided (and, with a
-- budget member, as budget.consumed), execution.completed as
-- execution.finished. A request event's principal and run come from the
-- request's row in ledger.request_status (columns), not from parsing its
-- tool.requested again for every event. It takes the events of a batch
-- already read (projection_read), and picks its own.

CREATE OR REPLACE FUNCTION ledger.apply_quota_usage(p_events ledger.projected_event[]) RETURNS bigint
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    n bigint;
    f ledger.quota_fact[];
BEGIN
    f := ARRAY(
    SELECT ROW(coalesce(rq.principal, o.payload ->> 'principal', e.payload ->> 'principal'),
           CASE WHEN rq.id IS NOT NULL THEN rq.run_id ELSE coalesce(o.payload ->> 'run_id', e.payload ->> 'run_id') END,
           e.recorded_at,
           CASE WHEN e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny' THEN coalesce(e.payload ->> 'error_kind', 'policy_denied')
                WHEN e.type = 'approval.denied' THEN 'approval_denied' END,
           (e.type = 'tool.requested')::int,
           (e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'allow' AND e.payload ->> 'stage' = 'allow')::int,
           ((e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny') OR e.type = 'approval.denied')::int,
           (e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny' AND e.payload ->> 'error_kind' = 'budget_exhausted')::int,
           (e.type IN ('execution.finished', 'execution.completed'))::int,
           (e.type IN ('execution.finished', 'execution.completed') AND e.payload ->> 'state' IS DISTINCT FROM 'succeeded')::int,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'fuel_used')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'cpu_ms')::bigint,
               coalesce((e.payload -> 'resources' ->> 'cpu_user_ms')::bigint, 0) + coalesce((e.payload -> 'resources' ->> 'cpu_sys_ms')::bigint, 0)) ELSE 0 END,
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN coalesce((e.payload -> 'resources' ->> 'wall_ms')::bigint, 0) ELSE 0 END,
           -- An outcome without an output member counts 0 bytes, as one
           -- whose output is null: a batch of such outcomes alone summed
           -- to NULL and failed the insert.
           CASE WHEN e.type IN ('execution.finished', 'execution.completed') AND jsonb_typeof(e.payload -> 'output') <> 'null'
                THEN octet_length((e.payload -> 'output')::text) ELSE 0 END,
           (e.type = 'egress.connection' AND (e.payload ->> 'allowed')::boolean)::int,
           (e.type = 'egress.connection' AND NOT (e.payload ->> 'allowed')::boolean)::int,
           CASE WHEN e.type = 'egress.connection' THEN coalesce((e.payload ->> 'bytes_up')::bigint, 0) + coalesce((e.payload ->> 'bytes_down')::bigint, 0) ELSE 0 END,
           CASE WHEN e.type = 'run.budget_set' THEN (e.payload ->> 'max_calls')::int END,
           (e.type = 'budget.consumed' OR (e.type = 'request.decided' AND e.payload ? 'budget'))::int,
           CASE WHEN e.type = 'run.ended' THEN e.recorded_at END,
           e.version,
           e.type IN ('run.budget_set', 'run.ended'))::ledger.quota_fact
    FROM unnest(p_events) e
    -- A request's principal and run: its request_status row's columns,
    -- which submit wrote with its tool.requested, in the same transaction,
    -- before any later event of the stream could commit; without that row
    -- (a log whose request read model is not there), its tool.requested's.
    -- A process's: its process.started's.
    LEFT JOIN ledger.request_status rq
           ON rq.id = CASE WHEN e.stream ~ '^request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                           THEN substr(e.stream, 9)::uuid END
    -- A lateral probe of (stream, version = 1), not a join: a plan kept
    -- from an empty ledger joined every stream's first event, read whole
    -- at each call (20 ms a call after 40,000 events, and growing).
    LEFT JOIN LATERAL (
        SELECT o.stream, o.payload FROM ledger.events o
        WHERE o.stream = e.stream AND o.version = 1
        LIMIT 1) o
           ON rq.id IS NULL
              AND e.type IN ('request.decided', 'policy.decided', 'approval.denied', 'execution.finished', 'execution.completed',
                             'egress.connection', 'budget.consumed')
              AND (e.stream LIKE 'request:%' OR e.stream LIKE 'process:%')
    WHERE e.type = ANY(ledger.projection_types('quota_usage'))
      AND (e.type IN ('tool.requested', 'run.budget_set', 'run.ended') OR o.stream IS NOT NULL OR rq.id IS NOT NULL));
    n := cardinality(f);
    IF n = 0 THEN
        RETURN 0;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(f) x WHERE x.principal IS NULL) THEN
        RAISE EXCEPTION 'ledger.apply_quota_usage: an event names no principal, nor does its stream''s first event'
            USING ERRCODE = 'data_exception';
    END IF;

    INSERT INTO quota_usage AS q (principal, calls_requested, calls_allowed, calls_denied, budget_exhausted, calls_finished,
                                  calls_failed, fuel, cpu_ms, wall_ms, output_bytes, egress_connections, egress_refused,
                                  egress_bytes, updated_at)
    SELECT principal, sum(requested), sum(allowed), sum(denied), sum(exhausted), sum(finished), sum(failed), sum(fuel),
           sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(refused), sum(egress_bytes), max(recorded_at)
    FROM unnest(f) WHERE NOT run_event AND budget_used = 0
    GROUP BY principal ORDER BY principal
    ON CONFLICT (principal) DO UPDATE
    SET calls_requested = q.calls_requested + EXCLUDED.calls_requested, calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed,
        calls_denied = q.calls_denied + EXCLUDED.calls_denied, budget_exhausted = q.budget_exhausted + EXCLUDED.budget_exhausted,
        calls_finished = q.calls_finished + EXCLUDED.calls_finished, calls_failed = q.calls_failed + EXCLUDED.calls_failed,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections,
        egress_refused = q.egress_refused + EXCLUDED.egress_refused, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes,
        updated_at = greatest(q.updated_at, EXCLUDED.updated_at);

    INSERT INTO quota_usage_runs AS q (principal, run_id, budget_limit, budget_used, ended_at, calls_requested, calls_allowed,
                                       calls_denied, budget_exhausted, calls_finished, calls_failed, fuel, cpu_ms, wall_ms,
                                       output_bytes, egress_connections, egress_refused, egress_bytes, updated_at)
    SELECT principal, run_id, (array_agg(budget_limit ORDER BY version DESC) FILTER (WHERE budget_limit IS NOT NULL))[1],
           sum(budget_used), min(ended_at), sum(requested), sum(allowed), sum(denied), sum(exhausted), sum(finished),
           sum(failed), sum(fuel), sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(refused), sum(egress_bytes),
           max(recorded_at)
    FROM unnest(f) WHERE run_id IS NOT NULL
    GROUP BY principal, run_id ORDER BY principal, run_id
    ON CONFLICT (principal, run_id) DO UPDATE
    SET budget_limit = coalesce(EXCLUDED.budget_limit, q.budget_limit), budget_used = q.budget_used + EXCLUDED.budget_used,
        ended_at = coalesce(least(q.ended_at, EXCLUDED.ended_at), q.ended_at, EXCLUDED.ended_at),
        calls_requested = q.calls_requested + EXCLUDED.calls_requested, calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed,
        calls_denied = q.calls_denied + EXCLUDED.calls_denied, budget_exhausted = q.budget_exhausted + EXCLUDED.budget_exhausted,
        calls_finished = q.calls_finished + EXCLUDED.calls_finished, calls_failed = q.calls_failed + EXCLUDED.calls_failed,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections,
        egress_refused = q.egress_refused + EXCLUDED.egress_refused, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes,
        updated_at = greatest(q.updated_at, EXCLUDED.updated_at);

    INSERT INTO quota_denials AS q (principal, run_id, reason, denied)
    SELECT principal, coalesce(run_id, ''), reason, sum(denied)
    FROM unnest(f) WHERE denied > 0
    GROUP BY principal, coalesce(run_id, ''), reason ORDER BY 1, 2, 3
    ON CONFLICT (principal, run_id, reason) DO UPDATE SET denied = q.denied + EXCLUDED.denied;

    INSERT INTO quota_denial_buckets AS q (principal, bucket, bucket_start, reason, denied)
    SELECT f.principal, b.bucket, date_trunc(b.bucket, f.recorded_at, 'UTC'), f.reason, sum(f.denied)
    FROM unnest(f) f CROSS JOIN unnest(ARRAY['hour', 'day']) AS b(bucket)
    WHERE f.denied > 0
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (principal, bucket, bucket_start, reason) DO UPDATE SET denied = q.denied + EXCLUDED.denied;

    INSERT INTO quota_usage_buckets AS q (principal, bucket, bucket_start, calls_allowed, calls_denied, fuel, cpu_ms, wall_ms,
                                          output_bytes, egress_connections, egress_bytes)
    SELECT f.principal, b.bucket, date_trunc(b.bucket, f.recorded_at, 'UTC'), sum(allowed), sum(denied), sum(fuel),
           sum(cpu_ms), sum(wall_ms), sum(output_bytes), sum(conns), sum(egress_bytes)
    FROM unnest(f) f CROSS JOIN unnest(ARRAY['minute', 'hour', 'day']) AS b(bucket)
    WHERE allowed + denied + finished + conns + refused > 0
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (principal, bucket, bucket_start) DO UPDATE
    SET calls_allowed = q.calls_allowed + EXCLUDED.calls_allowed, calls_denied = q.calls_denied + EXCLUDED.calls_denied,
        fuel = q.fuel + EXCLUDED.fuel, cpu_ms = q.cpu_ms + EXCLUDED.cpu_ms, wall_ms = q.wall_ms + EXCLUDED.wall_ms,
        output_bytes = q.output_bytes + EXCLUDED.output_bytes,
        egress_connections = q.egress_connections + EXCLUDED.egress_connections, egress_bytes = q.egress_bytes + EXCLUDED.egress_bytes;
    RETURN n;
END $$;

REVOKE ALL ON FUNCTION ledger.apply_quota_usage(p_events ledger.projected_event[]) FROM PUBLIC;

-- The events of a range: read once (projection_read), then applied.
CREATE OR REPLACE FUNCTION ledger.apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE sql
    AS $$
    SELECT ledger.apply_quota_usage(ledger.projection_read(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                                                           ledger.projection_types('quota_usage')))
$$;

REVOKE ALL ON FUNCTION ledger.apply_quota_usage(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

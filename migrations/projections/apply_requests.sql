-- depends: events/events_between.sql
-- depends: events/events_in_tx.sql

-- requests: ledger.request_status, from the request:<id> streams, in
-- either grammar (021): request.decided is policy.decided and, when it
-- runs, execution.started; execution.completed is execution.finished and
-- attestation.signed.
--
-- A final state (succeeded, failed, denied, cancelled) is sticky: the
-- first final event decides the outcome and finished_at, and nothing after
-- it changes them (the executor's request.cancelled that follows a
-- cancelled execution.finished, or an event of the same stream that
-- reached the log's order ahead of an earlier version). Before that the
-- newest state-changing event decides the state.

CREATE OR REPLACE FUNCTION ledger.apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v      ledger.projected_event[];
    n_req  int;
    n_ids  bigint;
    n_rows bigint;
    v_bad  text;
BEGIN
    IF p_from_tx = p_to_tx THEN
        v := ARRAY(SELECT e FROM ledger.events_in_tx(p_from_tx, p_from_pos, p_to_pos,
                       ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.requested', 'approval.granted',
                             'approval.denied', 'execution.started', 'execution.finished', 'execution.completed',
                             'request.cancelled', 'lease.expired', 'attestation.signed']) e
                   WHERE e.stream LIKE 'request:%'
                   ORDER BY e.position);
    ELSE
        v := ARRAY(SELECT e FROM ledger.events_between(p_from_tx, p_from_pos, p_to_tx, p_to_pos,
                       ARRAY['tool.requested', 'request.decided', 'policy.decided', 'approval.requested', 'approval.granted',
                             'approval.denied', 'execution.started', 'execution.finished', 'execution.completed',
                             'request.cancelled', 'lease.expired', 'attestation.signed']) e
                   WHERE e.stream LIKE 'request:%'
                   ORDER BY e.tx_id, e.position);
    END IF;
    IF cardinality(v) = 0 THEN
        RETURN 0;
    END IF;
    SELECT count(*) FILTER (WHERE e.type = 'tool.requested') INTO n_req FROM unnest(v) e;

    -- (submit's call has only its tool.requested: it skips the rest.)
    IF n_req > 0 THEN
        INSERT INTO request_status (id, principal, tool, run_id, idempotency_key, input_digest, state, submitted_at)
        SELECT substr(e.stream, 9)::uuid, e.payload ->> 'principal', e.payload ->> 'tool', e.payload ->> 'run_id',
               e.payload ->> 'idempotency_key', decode(substr(e.payload ->> 'input_digest', 8), 'hex'), 'pending',
               e.recorded_at
        FROM unnest(v) e
        WHERE e.type = 'tool.requested'
        ORDER BY e.position;
    END IF;
    IF n_req = cardinality(v) THEN
        RETURN n_req;
    END IF;

    WITH ch AS MATERIALIZED (
        SELECT substr(e.stream, 9)::uuid AS id, e.version, e.recorded_at, x.state,
               x.state IN ('succeeded', 'failed', 'denied', 'cancelled') AS final,
               x.error_kind, x.error, x.output, x.tier,
               CASE WHEN e.type IN ('attestation.signed', 'execution.completed') THEN e.payload ->> 'attestation_digest' END AS attestation
        FROM unnest(v) e
        CROSS JOIN LATERAL (
            SELECT CASE e.type
                       WHEN 'request.decided' THEN CASE e.payload ->> 'verdict' WHEN 'deny' THEN 'denied' WHEN 'run' THEN 'running' END
                       WHEN 'policy.decided' THEN CASE WHEN e.payload ->> 'decision' = 'deny' THEN 'denied' END
                       WHEN 'approval.requested' THEN 'awaiting_approval'
                       WHEN 'approval.granted' THEN 'pending'
                       WHEN 'approval.denied' THEN 'denied'
                       WHEN 'execution.started' THEN 'running'
                       WHEN 'execution.finished' THEN e.payload ->> 'state'
                       WHEN 'execution.completed' THEN e.payload ->> 'state'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN CASE e.payload ->> 'action' WHEN 'requeued' THEN 'pending'
                                                                             WHEN 'cancelled' THEN 'cancelled'
                                                                             ELSE 'failed' END
                   END AS state,
                   CASE e.type
                       WHEN 'request.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'policy.decided' THEN e.payload ->> 'error_kind'
                       WHEN 'approval.denied' THEN 'approval_denied'
                       WHEN 'execution.finished' THEN e.payload ->> 'error_kind'
                       WHEN 'execution.completed' THEN e.payload ->> 'error_kind'
                       WHEN 'request.cancelled' THEN 'cancelled'
                       WHEN 'lease.expired' THEN coalesce(e.payload ->> 'error_kind',
                           CASE e.payload ->> 'action' WHEN 'cancelled' THEN 'cancelled' ELSE 'outcome_unknown' END)
                   END AS error_kind,
                   CASE e.type
                       WHEN 'request.decided' THEN e.payload ->> 'message'
                       WHEN 'policy.decided' THEN e.payload ->> 'message'
                       WHEN 'approval.denied' THEN coalesce(e.payload ->> 'error',
                           CASE WHEN e.payload ->> 'approver' IS NOT NULL
                                THEN 'approval denied by ' || (e.payload ->> 'approver') || coalesce(': ' || (e.payload ->> 'note'), '')
                                ELSE 'no approval within ' || coalesce(e.payload ->> 'timeout_ms', '?') || ' ms' END)
                       WHEN 'execution.finished' THEN e.payload ->> 'error'
                       WHEN 'execution.completed' THEN e.payload ->> 'error'
                       WHEN 'request.cancelled' THEN 'cancelled by ' || coalesce(e.metadata ->> 'actor', 'unknown')
                                                     || coalesce(': ' || (e.payload ->> 'reason'), '')
                       WHEN 'lease.expired' THEN e.payload ->> 'error'
                   END AS error,
                   CASE WHEN e.type IN ('execution.finished', 'execution.completed') THEN nullif((e.payload -> 'output')::jsonb, 'null'::jsonb) END AS output,
                   CASE WHEN e.type IN ('execution.finished', 'execution.completed', 'lease.expired') THEN e.payload ->> 'tier' END AS tier
        ) x
        WHERE e.type <> 'tool.requested'
    ), ids AS (
        SELECT DISTINCT id FROM ch
    ), fin AS (
        SELECT DISTINCT ON (id) id, state, error_kind, error, output, tier, recorded_at
        FROM ch WHERE final ORDER BY id, version
    ), cur AS (
        SELECT DISTINCT ON (id) id, state FROM ch WHERE state IS NOT NULL AND NOT final ORDER BY id, version DESC
    ), att AS (
        SELECT DISTINCT ON (id) id, attestation FROM ch WHERE attestation IS NOT NULL ORDER BY id, version DESC
    ), upd AS (
        UPDATE request_status r
        SET state = CASE WHEN r.finished_at IS NOT NULL THEN r.state
                         WHEN fin.id IS NOT NULL THEN fin.state
                         ELSE coalesce(cur.state, r.state) END,
            error_kind = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.error_kind ELSE r.error_kind END,
            error = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.error ELSE r.error END,
            output = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.output ELSE r.output END,
            tier = CASE WHEN r.finished_at IS NULL AND fin.id IS NOT NULL THEN fin.tier ELSE r.tier END,
            finished_at = coalesce(r.finished_at, fin.recorded_at),
            attestation_digest = coalesce(att.attestation, r.attestation_digest)
        FROM ids LEFT JOIN fin USING (id) LEFT JOIN cur USING (id) LEFT JOIN att USING (id)
        WHERE r.id = ids.id
        RETURNING r.id
    )
    SELECT (SELECT count(*) FROM ids), (SELECT count(*) FROM upd),
           (SELECT min(ids.id::text) FROM ids WHERE ids.id NOT IN (SELECT upd.id FROM upd))
    INTO n_ids, n_rows, v_bad;
    IF n_rows <> n_ids THEN
        RAISE EXCEPTION 'ledger.apply_requests: request % has events but no tool.requested before them', v_bad
            USING ERRCODE = 'data_exception';
    END IF;
    RETURN cardinality(v);
END $$;

REVOKE ALL ON FUNCTION ledger.apply_requests(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint) FROM PUBLIC;

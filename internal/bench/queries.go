package bench

// The benchmark's SQL: reads of each system's own tables, and the one call
// that submits.
const (
	queryLedgerMapPrincipal = `INSERT INTO ledger.principals (login_role, principal) VALUES (session_user, 'bench')`

	queryLedgerSubmit = `SELECT ledger.submit($1, $2::jsonb, $3)`

	// queryLedgerDepth counts requests not yet final: final ones leave the queue.
	queryLedgerDepth = `SELECT count(*) FROM ledger.queue`

	queryLedgerStates = `SELECT state, count(*) FROM ledger.request_status GROUP BY state ORDER BY state`

	queryLedgerLatency = `SELECT count(*),
       coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(percentile_disc(0.9) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(max(ms), 0)
FROM (SELECT extract(epoch FROM finished_at - submitted_at)::float8 * 1000 AS ms
      FROM ledger.request_status WHERE finished_at IS NOT NULL) l`

	queryLedgerEvents = `SELECT count(*) FROM ledger.events WHERE stream LIKE 'request:%'`

	queryRiverDepth = `SELECT count(*) FROM river_job
WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`

	queryRiverStates = `SELECT state::text, count(*) FROM river_job GROUP BY state ORDER BY state`

	// River sets finalized_at when the worker returns, before its batched
	// completer commits; created_at is the inserting transaction's start.
	queryRiverLatency = `SELECT count(*),
       coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(percentile_disc(0.9) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY ms), 0),
       coalesce(max(ms), 0)
FROM (SELECT extract(epoch FROM finalized_at - created_at)::float8 * 1000 AS ms
      FROM river_job WHERE finalized_at IS NOT NULL) l`

	// queryLatencyWindows (with a system's table, submit and final time
	// columns) reads p50 and p99 of submit→final per window of $1 seconds
	// of submit time, from the first request's: whether latency stays flat
	// under a steady load, or climbs as the tables age.
	queryLatencyWindows = `SELECT w, count(*), percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)
FROM (SELECT floor(extract(epoch FROM s - min(s) OVER ()) / $1)::int AS w, extract(epoch FROM f - s)::float8 * 1000 AS ms
      FROM (SELECT %s AS s, %s AS f FROM %s WHERE %s IS NOT NULL) x) l
GROUP BY w ORDER BY w`

	queryServerFacts = `SELECT current_setting('server_version'), current_setting('fsync'),
       current_setting('synchronous_commit'), current_setting('shared_buffers')`
)

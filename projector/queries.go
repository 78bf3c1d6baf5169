package projector

// The package's SQL. Checkpoints are written only through the ledger's
// projection_* functions (migration 007); xid8 travels as text.
const (
	// lockClass is the first key of every projector advisory lock; the
	// second is the projection's ledger.projections.lock_key. ASCII "proj".
	lockClass = 0x70726f6a

	queryRegister = `SELECT ledger.projection_register($1)`

	queryTryLock = `SELECT pg_try_advisory_lock($1::int, $2::int)`

	queryCheckpoint = `SELECT tx_id::text, position, state FROM ledger.projections WHERE name = $1`

	// queryBatch reads the next events in delivery order, with the payload
	// and metadata only of the types the projection consumes: the others
	// move the checkpoint and need nothing else.
	queryBatch = `SELECT position, tx_id::text, stream, version, type,
       CASE WHEN type = ANY($4) THEN payload::text END,
       CASE WHEN type = ANY($4) THEN metadata::text END,
       recorded_at, hash
FROM ledger.read_all($1::xid8, $2, $3)`

	queryUnlock = `SELECT pg_advisory_unlock($1::int, $2::int)`

	queryStepGroup = `SELECT name, tx_id, "position", passed, applied FROM ledger.projection_step_group($1::text[], $2)`

	queryStep = `SELECT tx_id, "position", passed, applied FROM ledger.projection_step($1, $2::xid8, $3, $4)`

	queryAdvance = `SELECT ledger.projection_advance($1, $2::xid8, $3, $4::xid8, $5, $6)`

	queryFail = `SELECT ledger.projection_fail($1, $2::xid8, $3, $4, $5)`

	queryRetry = `SELECT ledger.projection_retry($1, $2)`

	// queryEventAt and queryLogEnd check that a checkpoint names an event.
	queryEventAt = `SELECT EXISTS (SELECT 1 FROM ledger.events WHERE tx_id = $1::xid8 AND position = $2)`

	queryLogEnd = `SELECT tx_id::text, position FROM ledger.events ORDER BY tx_id DESC, position DESC LIMIT 1`

	// queryStatus reads checkpoints and lag. Events behind counts what
	// read_all could deliver after the checkpoint now, by a range scan of
	// events_delivery_idx capped at lagCountCap so that a projection far
	// behind costs a bounded read; seconds behind is the age of the first
	// of them.
	// An inline projection is never behind: its writers apply their events
	// in the transactions that append them.
	queryStatus = `SELECT p.name, p.mode, p.tx_id::text, p.position, p.state, p.applied_total,
       p.failed_tx_id::text, p.failed_position, p.failed_type, p.last_error, p.updated_at,
       CASE WHEN p.mode = 'inline' THEN 0 ELSE
       (SELECT count(*) FROM (SELECT 1 FROM ledger.events e
                              WHERE (e.tx_id, e.position) > (p.tx_id, p.position)
                                AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
                              LIMIT ` + lagCountCapSQL + `) AS behind) END AS events_behind,
       CASE WHEN p.mode = 'inline' THEN 0 ELSE
       coalesce(extract(epoch FROM clock_timestamp() - (
           SELECT e.recorded_at FROM ledger.events e
           WHERE (e.tx_id, e.position) > (p.tx_id, p.position)
             AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY e.tx_id, e.position LIMIT 1)), 0)::float8 END AS seconds_behind,
       p.rebuild_position
FROM ledger.projections p
WHERE $1::text IS NULL OR p.name = $1
ORDER BY p.name`

	// queryVerifyTargets reads the projections Verify visits: those named
	// in $1, or every one with tables when $1 is NULL.
	queryVerifyTargets = `SELECT name, mode, tables FROM ledger.projections
WHERE CASE WHEN $1::text[] IS NULL THEN cardinality(tables) > 0 ELSE name = ANY($1) END
ORDER BY name`

	// lagCountCap bounds the events-behind count.
	lagCountCap    = 1_000_000
	lagCountCapSQL = "1000000"
)

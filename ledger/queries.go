package ledger

// The package's SQL. Writes go through the ledger.* functions so that the
// rules they enforce hold for every client, Go or not.
const (
	eventColumns = `position, tx_id::text::bigint, stream, version, type, payload::text, metadata::text, recorded_at, hash`

	queryAppendEvents = `SELECT "position", hash FROM ledger.append_events($1, $2, $3, $4, $5)`

	queryExecutorRecord = `SELECT "position", hash FROM ledger.executor_record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::interval)`

	queryStreamHead = `SELECT coalesce(max(version), 0) FROM ledger.events WHERE stream = $1`

	queryReadStream = `SELECT ` + eventColumns + ` FROM ledger.events
WHERE stream = $1 AND version > $2 ORDER BY version LIMIT $3`

	// queryReadStreamSealed is queryReadStream with each event's leaf and
	// whether it is an unsealed event (migration 017).
	queryReadStreamSealed = `SELECT e.position, e.tx_id::text::bigint, e.stream, e.version, e.type, e.payload::text,
       e.metadata::text, e.recorded_at, e.hash, l.leaf_index,
       CASE WHEN ledger.in_record(e.tx_id, e.position) THEN ''
            WHEN e.tx_id >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'future_transaction'
            ELSE 'behind_sealer' END
FROM ledger.events e
LEFT JOIN ledger.log_leaves l ON l.position = e.position AND l.tx_id = e.tx_id
WHERE e.stream = $1 AND e.version > $2 ORDER BY e.version LIMIT $3`

	queryReadAll = `SELECT ` + eventColumns + ` FROM ledger.read_all($1::xid8, $2, $3)`

	queryRunBudget = `SELECT max_calls, used, ended FROM ledger.run_budget($1, $2)`

	querySubmit = `SELECT ledger.submit($1, $2::jsonb, $3, $4, $5::jsonb)`

	querySubmitMany = `SELECT ledger.submit_many($1::text[], $2::jsonb[], $3::text[], $4::text[], $5::jsonb[])`

	queryCancel = `SELECT ledger.cancel($1, $2)`

	queryNotifyChannel = `SELECT ledger.notify_channel()`

	queryGetRequest = `SELECT id, principal, tool, run_id, state, error_kind, error, output, tier,
       attestation_digest, submitted_at, finished_at
FROM ledger.requests WHERE id = $1`

	// The Merkle log (migration 011).
	queryLogSize = `SELECT ledger.log_size()`

	queryReadNodes = `SELECT u.ord, n.hash
FROM unnest($1::smallint[], $2::bigint[]) WITH ORDINALITY AS u(l, i, ord)
JOIN ledger.log_nodes n ON n.level = u.l AND n.idx = u.i`

	checkpointSelect = `SELECT c.size, c.root_hash, c.origin, c.note, c.signed_at, c.published_at,
       coalesce(s.names, '{}'), coalesce(s.hashes, '{}'), coalesce(s.sigs, '{}')
FROM ledger.checkpoints c
LEFT JOIN LATERAL (
    SELECT array_agg(x.key_name ORDER BY x.key_name, x.key_hash) AS names,
           array_agg(x.key_hash ORDER BY x.key_name, x.key_hash) AS hashes,
           array_agg(x.signature ORDER BY x.key_name, x.key_hash) AS sigs
    FROM ledger.checkpoint_cosignatures x WHERE x.size = c.size) s ON true`

	queryNewestCheckpoint = checkpointSelect + `
WHERE NOT $1 OR c.published_at IS NOT NULL
ORDER BY c.size DESC LIMIT 1`

	queryCheckpointAt = checkpointSelect + `
WHERE c.size = $1`

	queryCheckpointsBetween = checkpointSelect + `
WHERE c.size BETWEEN $1 AND $2
ORDER BY c.size LIMIT $3`

	queryCosign = `SELECT ledger.log_cosign($1, $2, $3, $4)`

	queryLogAppend = `SELECT ledger.log_append($1::xid8, $2, $3::xid8, $4, $5, $6, $7, $8)`

	queryLogCheckpoint = `SELECT ledger.log_checkpoint($1, $2, $3, $4)`

	queryLogPublish = `SELECT ledger.log_publish($1)`

	queryUnpublished = checkpointSelect + `
WHERE c.published_at IS NULL
ORDER BY c.size DESC LIMIT 16`

	// queryUnsignedEvents counts the leaves after the newest checkpoint
	// that are not checkpoint.signed events: a checkpoint's own event must
	// not be what calls for the next one.
	queryUnsignedEvents = `SELECT count(*) FROM ledger.log_leaves l JOIN ledger.events e USING (tx_id, "position")
WHERE l.leaf_index >= $1 AND e.type <> 'checkpoint.signed'`

	// queryLogRecordFaults records the events below the sealed horizon
	// that are not leaves (migration 017).
	queryLogRecordFaults = `SELECT recorded, present FROM ledger.log_record_faults()`

	// queryPartitionAhead creates the range partitions of ledger.events
	// needed next and says how many (migrations/events/partitions.sql).
	queryPartitionAhead = `SELECT ledger.events_partition_ahead()`

	// queryUnsealedEvents lists them, without recording them.
	queryUnsealedEvents = `SELECT tx_id::text::bigint, "position", stream, version, type, recorded_at, reason
FROM ledger.unsealed_events($1)`

	// queryLogBehind counts the events read_all could deliver after the
	// log's checkpoint (capped) and the age of the first.
	queryLogBehind = `SELECT
    (SELECT count(*) FROM (SELECT 1 FROM ledger.events e
                           WHERE (e.tx_id, e.position) > (p.tx_id, p.position)
                             AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
                           LIMIT 1000000) b),
    coalesce(extract(epoch FROM clock_timestamp() - (
        SELECT e.recorded_at FROM ledger.events e
        WHERE (e.tx_id, e.position) > (p.tx_id, p.position)
          AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.tx_id, e.position LIMIT 1)), 0)::float8
FROM ledger.projections p WHERE p.name = 'log'`
)

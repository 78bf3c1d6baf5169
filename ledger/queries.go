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

	queryReadAll = `SELECT ` + eventColumns + ` FROM ledger.read_all($1::xid8, $2, $3)`

	querySubmit = `SELECT ledger.submit($1, $2::jsonb, $3, $4, $5::jsonb)`

	queryCancel = `SELECT ledger.cancel($1, $2)`

	queryNotifyChannel = `SELECT ledger.notify_channel()`

	queryGetRequest = `SELECT id, principal, tool, run_id, state, error_kind, error, output, tier,
       attestation_digest, submitted_at, finished_at
FROM ledger.requests WHERE id = $1`
)

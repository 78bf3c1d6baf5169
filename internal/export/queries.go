package export

// The package's SQL. Each reads through an index: log_leaves by
// leaf_index (its primary key) or position (log_leaves_position_idx),
// events by (tx_id, position) (events_delivery_idx) or (stream, version)
// (events_pkey), log_nodes by (level, idx).
//
// Lookups per outer row are LATERAL subqueries with LIMIT 1 (one row) or
// OFFSET 0 (a stream's events), which PostgreSQL does not flatten into
// joins and runs as an index scan per row: as plain joins, the planner,
// which estimates a stream at a thousand events when some streams hold
// that many, hashes all of log_leaves to find a request's six leaves.

// leafColumns are what a bundle needs of a leaf: its index, its leaf hash
// as stored (level 0 of log_nodes, never recomputed) and its event, whose
// columns are NULL when the event row is gone.
const leafColumns = `l.leaf_index, n.hash, e.position, e.stream, e.version, e.type, e.payload::text, e.metadata::text,
       e.recorded_at, e.hash`

const (
	// leafEvent is a leaf's event, by the key log_leaves holds.
	leafEvent = `LEFT JOIN LATERAL (
    SELECT e.position, e.stream, e.version, e.type, e.payload, e.metadata, e.recorded_at, e.hash
    FROM ledger.events e WHERE e.tx_id = l.tx_id AND e.position = l.position LIMIT 1) e ON true`

	// queryLeafRange reads the leaves [$1, $2) in order, with their leaf
	// hashes: two ranges of primary keys. queryEventRange then reads their
	// events, the events from the first leaf's (tx_id, position) $1, $2 to
	// the last one's $3, $4: a range of events_delivery_idx, in the same
	// order (the log's leaves are the events in delivery order). The
	// condition on tx_id alone, implied by the others, is what the planner
	// estimates a range of the index from; without it, it scans the table.
	queryLeafRange = `SELECT l.leaf_index, l.tx_id::text, l.position, n.hash
FROM ledger.log_leaves l
JOIN ledger.log_nodes n ON n.level = 0 AND n.idx = l.leaf_index AND n.idx >= $1 AND n.idx < $2
WHERE l.leaf_index >= $1 AND l.leaf_index < $2
ORDER BY l.leaf_index`

	queryEventRange = `SELECT e.tx_id::text, e.position, e.stream, e.version, e.type, e.payload::text, e.metadata::text,
       e.recorded_at, e.hash
FROM ledger.events e
WHERE e.tx_id BETWEEN $1::xid8 AND $3::xid8
  AND (e.tx_id, e.position) >= ($1::xid8, $2) AND (e.tx_id, e.position) <= ($3::xid8, $4)
ORDER BY e.tx_id, e.position`

	// queryLeafList reads the leaves $1 (ascending) in order.
	queryLeafList = `SELECT ` + leafColumns + `
FROM unnest($1::bigint[]) AS u(i)
CROSS JOIN LATERAL (SELECT l.leaf_index, l.tx_id, l.position FROM ledger.log_leaves l WHERE l.leaf_index = u.i LIMIT 1) l
CROSS JOIN LATERAL (SELECT n.hash FROM ledger.log_nodes n WHERE n.level = 0 AND n.idx = u.i LIMIT 1) n
` + leafEvent + `
ORDER BY l.leaf_index`

	// queryUnattested finds, among the leaves [$1, $2), the first final
	// outcome of a request whose attestation is still to come: not sealed
	// below $2, but written (sealed later or not yet), or not written yet
	// while the request ended less than $3 seconds ago and the read model
	// does not say it is attested. An attestation that is not coming (the
	// outcome is older, or the read model names one that ledger.events
	// no longer holds) does not count: waiting for it would only make the
	// export fall back to older checkpoints, which hides what happened.
	// The final outcomes are internal/bundle's: a policy denial, an
	// approval denial, the execution's end, a cancellation, a lease expiry
	// that did not requeue; in the compact grammar (021) request.decided
	// denies and execution.completed ends, attested by itself.
	queryUnattested = `SELECT substr(e.stream, 9), e.type, l.leaf_index
FROM ledger.log_leaves l
CROSS JOIN LATERAL (
    SELECT e.stream, e.type, e.payload, e.recorded_at FROM ledger.events e
    WHERE e.tx_id = l.tx_id AND e.position = l.position LIMIT 1) e
LEFT JOIN LATERAL (
    SELECT coalesce(al.leaf_index < $2, false) AS sealed
    FROM ledger.events a
    LEFT JOIN LATERAL (SELECT al.leaf_index FROM ledger.log_leaves al WHERE al.position = a.position LIMIT 1) al ON true
    WHERE a.stream = e.stream AND a.type IN ('attestation.signed', 'execution.completed')
    ORDER BY a.version DESC
    LIMIT 1) att ON true
WHERE l.leaf_index >= $1 AND l.leaf_index < $2
  AND e.stream LIKE 'request:%'
  AND (e.type IN ('approval.denied', 'execution.finished', 'execution.completed', 'request.cancelled')
       OR e.type IN ('policy.decided', 'request.decided') AND e.payload ->> 'decision' = 'deny'
       OR e.type = 'lease.expired' AND e.payload ->> 'action' IS DISTINCT FROM 'requeued')
  AND (NOT att.sealed
       OR att.sealed IS NULL AND e.recorded_at > clock_timestamp() - make_interval(secs => $3) AND NOT EXISTS (
           SELECT 1 FROM ledger.requests r
           WHERE r.id::text = substr(e.stream, 9) AND r.attestation_digest IS NOT NULL))
ORDER BY l.leaf_index
LIMIT 1`

	// queryOlderCheckpoints lists the sizes of the checkpoints below $1,
	// newest first, published ones only when $2.
	queryOlderCheckpoints = `SELECT size FROM ledger.checkpoints
WHERE size < $1 AND (NOT $2 OR published_at IS NOT NULL)
ORDER BY size DESC LIMIT $3`

	// queryAnyCheckpoint says whether the log has a checkpoint at all,
	// published or not.
	queryAnyCheckpoint = `SELECT EXISTS (SELECT 1 FROM ledger.checkpoints)`

	// queryAttestationKeys lists the attestation key ids of the events
	// sealed below $1. The events table has no index on type: this is one
	// sequential scan, once per full export.
	queryAttestationKeys = `SELECT DISTINCT e.payload ->> 'key_id'
FROM ledger.events e
JOIN ledger.log_leaves l ON l.position = e.position
WHERE e.type IN ('attestation.signed', 'execution.completed') AND e.stream LIKE 'request:%' AND l.leaf_index < $1
  AND e.payload ->> 'key_id' IS NOT NULL
ORDER BY 1`

	// queryRequestExists says whether ledger.requests has request $1.
	queryRequestExists = `SELECT EXISTS (SELECT 1 FROM ledger.requests WHERE id = $1)`

	// querySelectedLeaves (with selectionWhere's conditions) lists the
	// leaves below $1 of the selected requests' streams, with each
	// attestation's envelope.
	querySelectedLeaves = `WITH sel AS MATERIALIZED (
    SELECT r.id FROM ledger.requests r %s
)
SELECT l.leaf_index, CASE WHEN e.type IN ('attestation.signed', 'execution.completed') THEN e.payload ->> 'envelope' END
FROM sel
CROSS JOIN LATERAL (SELECT e.position, e.type, e.payload FROM ledger.events e WHERE e.stream = 'request:' || sel.id::text OFFSET 0) e
CROSS JOIN LATERAL (SELECT l.leaf_index FROM ledger.log_leaves l WHERE l.position = e.position LIMIT 1) l
WHERE l.leaf_index < $1
ORDER BY l.leaf_index`

	// querySelectedUnsealed counts the selected requests and their events
	// that are not sealed below $1.
	querySelectedUnsealed = `WITH sel AS MATERIALIZED (
    SELECT r.id FROM ledger.requests r %s
)
SELECT (SELECT count(*) FROM sel), count(e.position) FILTER (WHERE l.leaf_index IS NULL OR l.leaf_index >= $1)
FROM sel
LEFT JOIN LATERAL (SELECT e.position FROM ledger.events e WHERE e.stream = 'request:' || sel.id::text OFFSET 0) e ON true
LEFT JOIN LATERAL (SELECT l.leaf_index FROM ledger.log_leaves l WHERE l.position = e.position LIMIT 1) l ON true`

	// queryStreamSealed reads how many events stream $1 has and the leaf
	// after its last sealed one, NULL when one is not sealed yet.
	queryStreamSealed = `SELECT count(*), CASE WHEN bool_and(l.leaf_index IS NOT NULL) THEN max(l.leaf_index) + 1 END
FROM ledger.events e
LEFT JOIN LATERAL (SELECT l.leaf_index FROM ledger.log_leaves l WHERE l.position = e.position LIMIT 1) l ON true
WHERE e.stream = $1`

	// queryStreamProofs reads a request stream's events by version, each
	// with its leaf and leaf hash when it is sealed.
	queryStreamProofs = `SELECT e.position, e.stream, e.version, e.type, e.payload::text, e.metadata::text, e.recorded_at, e.hash,
       l.leaf_index, n.hash
FROM ledger.events e
LEFT JOIN LATERAL (SELECT l.leaf_index FROM ledger.log_leaves l WHERE l.position = e.position LIMIT 1) l ON true
LEFT JOIN LATERAL (SELECT n.hash FROM ledger.log_nodes n WHERE n.level = 0 AND n.idx = l.leaf_index LIMIT 1) n ON true
WHERE e.stream = $1
ORDER BY e.version`

	// queryFinalRequests counts the requests the read model says are
	// final.
	queryFinalRequests = `SELECT count(*) FROM ledger.requests
WHERE state IN ('succeeded', 'failed', 'denied', 'cancelled')`

	// queryReadModelFaults lists the final requests of the read model
	// whose attestation is not the one the log sealed below $1: none in
	// the stream, one not sealed below $1, or another digest. recent: it
	// ended less than $2 seconds ago. A request whose attestation and
	// first event are in an archived partition (execledger archive) is
	// not looked at: its events are in the archive's bundle.
	queryReadModelFaults = `SELECT r.id::text, r.state, r.attestation_digest, r.finished_at,
       coalesce(clock_timestamp() - r.finished_at < make_interval(secs => $2), false),
       a.digest, a.leaf_index
FROM ledger.requests r
LEFT JOIN LATERAL (
    SELECT e.payload ->> 'attestation_digest' AS digest,
           (SELECT l.leaf_index FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id) AS leaf_index
    FROM ledger.events e
    WHERE e.stream = 'request:' || r.id::text AND e.type IN ('attestation.signed', 'execution.completed')
    ORDER BY e.version DESC
    LIMIT 1
) a ON true
WHERE r.state IN ('succeeded', 'failed', 'denied', 'cancelled')
  AND (a.digest IS NULL OR a.leaf_index IS NULL OR a.leaf_index >= $1
       OR a.digest IS DISTINCT FROM r.attestation_digest)
  AND NOT (a.digest IS NULL AND EXISTS (SELECT 1 FROM ledger.event_archives x WHERE x.events > 0)
           AND NOT EXISTS (SELECT 1 FROM ledger.events e WHERE e.stream = 'request:' || r.id::text AND e.version = 1))
ORDER BY r.finished_at, r.id`

	// queryAttestedRequests reads the requests after id $2 (up to $3)
	// whose stream holds an attestation sealed below leaf $1: the row's
	// state, error kind, tier and attestation digest, the newest such
	// attestation (envelope and digest), and whether the row's output is
	// that of the stream's sealed execution.finished (none: no output).
	queryAttestedRequests = `SELECT r.id::text, r.state, r.error_kind, r.tier, r.attestation_digest, a.envelope, a.digest,
       r.output IS NOT DISTINCT FROM f.output
FROM ledger.requests r
JOIN LATERAL (
    SELECT e.payload ->> 'envelope' AS envelope, e.payload ->> 'attestation_digest' AS digest
    FROM ledger.events e
    JOIN ledger.log_leaves l ON l.position = e.position AND l.tx_id = e.tx_id AND l.leaf_index < $1
    WHERE e.stream = 'request:' || r.id::text AND e.type IN ('attestation.signed', 'execution.completed')
    ORDER BY e.version DESC
    LIMIT 1
) a ON true
LEFT JOIN LATERAL (
    SELECT nullif((e.payload -> 'output')::jsonb, 'null'::jsonb) AS output
    FROM ledger.events e
    JOIN ledger.log_leaves l ON l.position = e.position AND l.tx_id = e.tx_id AND l.leaf_index < $1
    WHERE e.stream = 'request:' || r.id::text AND e.type IN ('execution.finished', 'execution.completed')
    ORDER BY e.version
    LIMIT 1
) f ON true
WHERE r.id > $2::uuid
ORDER BY r.id
LIMIT $3`

	// queryRebuildable names the read models that can be rebuilt from
	// the log and compared (not the log itself).
	queryRebuildable = `SELECT name FROM ledger.projections
WHERE mode IN ('inline', 'async') AND cardinality(tables) > 0 ORDER BY name`
)

// The partitions of ledger.events and their archives (events/partitions.sql,
// events/archive.sql).
const (
	queryPartitions = `SELECT name, from_tx_id::text, to_tx_id::text, is_default,
       first_tx_id::text, first_position, last_tx_id::text, last_position
FROM ledger.event_partitions()
ORDER BY is_default, from_tx_id NULLS FIRST`

	queryArchivePlan = `SELECT from_tx_id::text, to_tx_id::text, first_leaf, last_leaf, first_position, last_position, events
FROM ledger.events_archive_plan($1)`

	queryArchiveDetach = `SELECT id, partition_name, events, first_leaf, last_leaf, first_position, last_position,
       checkpoint_size, bundle_sha256, archived_at, archived_by
FROM ledger.events_archive_detach($1, $2, $3, $4)`

	queryArchivedRanges = `SELECT first_leaf, last_leaf, range_hashes FROM ledger.event_archives
WHERE events > 0 ORDER BY first_leaf`

	// queryArchives lists the archived partitions, oldest first.
	queryArchives = `SELECT id, partition_name, events, first_leaf, last_leaf, first_position, last_position,
       checkpoint_size, bundle_sha256, archived_at, archived_by
FROM ledger.event_archives ORDER BY id`
)

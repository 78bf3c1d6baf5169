-- 024: ledger.events partitioned by range of tx_id, so that old ranges
-- can be archived (execledger archive) and detached.
--
-- Why tx_id: the log's leaves are the events in delivery order
-- (tx_id, position), so every event of a tx_id range is one contiguous
-- run of leaves, and a range is closed for good once the oldest running
-- transaction is above it. A range of positions has neither property:
-- positions commit out of order, and a position range's leaves
-- interleave with the next range's.
--
-- The table as it is becomes the first partition, events_0, covering
-- every tx_id below this migration's own (nothing is copied; attaching
-- reads it once to check its CHECK constraint). The parent, under the old
-- name, gets the same columns, checks and delivery index; position comes
-- from a sequence that continues the identity's (PostgreSQL 15 has no
-- identity column on a partitioned table). A default partition takes
-- what no range partition covers, so an append never fails for want of a
-- partition; ledger.events_partition_ahead (events/partitions.sql), which
-- migrate and the sealer call, keeps range partitions created ahead of
-- need.
--
-- (stream, version) cannot be a unique index of a partitioned table that
-- is not partitioned by it: ledger.stream_heads, one row per stream
-- moved by a statement trigger on ledger.events
-- (events/advance_stream_heads.sql), keeps each version unique.

LOCK TABLE ledger.events IN ACCESS EXCLUSIVE MODE;

-- read_all returns SETOF ledger.events, bound to the table's row type:
-- events/read_all.sql creates it again over the parent.
DROP FUNCTION ledger.read_all(xid8, bigint, integer);

-- The position sequence, continuing the identity's.
CREATE SEQUENCE ledger.events_position_next AS bigint;
SELECT setval('ledger.events_position_next', s.last_value, s.is_called) FROM ledger.events_position_seq s;
ALTER TABLE ledger.events ALTER COLUMN "position" DROP IDENTITY;
ALTER SEQUENCE ledger.events_position_next RENAME TO events_position_seq;

-- The old table becomes a partition. Its primary key (stream, version)
-- stays as it is; its triggers are the parent's from now on
-- (events/refuse_change.sql creates them there, and PostgreSQL clones
-- the row triggers onto every partition).
ALTER TABLE ledger.events RENAME TO events_0;
ALTER INDEX ledger.events_delivery_idx RENAME TO events_0_delivery_idx;
DROP TRIGGER events_no_update ON ledger.events_0;
DROP TRIGGER events_no_delete ON ledger.events_0;
DROP TRIGGER events_no_truncate ON ledger.events_0;

CREATE TABLE ledger.events (
    position    bigint      NOT NULL DEFAULT nextval('ledger.events_position_seq'),
    tx_id       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream      text        NOT NULL,
    version     bigint      NOT NULL,
    type        text        NOT NULL,
    payload     json        NOT NULL,
    metadata    json        NOT NULL DEFAULT '{}',
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    hash        bytea       NOT NULL GENERATED ALWAYS AS (ledger.event_hash(stream, version, type, payload, metadata, recorded_at)) STORED,
    CONSTRAINT events_version_check CHECK (version >= 1),
    CONSTRAINT events_stream_check CHECK (stream ~ '^[a-z][a-z_]*(:[^[:cntrl:]]+)?$' AND octet_length(stream) <= 300),
    CONSTRAINT events_type_check CHECK (type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
    CONSTRAINT events_payload_object CHECK (json_typeof(payload) = 'object'),
    CONSTRAINT events_metadata_object CHECK (json_typeof(metadata) = 'object')
) PARTITION BY RANGE (tx_id);
COMMENT ON TABLE ledger.events IS 'The immutable event log: the truth every read model is built from. Partitioned by range of tx_id (ledger.event_partitions).';
COMMENT ON COLUMN ledger.events.tx_id IS 'Writing transaction; (tx_id, position) is the gapless delivery order, and the partition key.';
COMMENT ON COLUMN ledger.events.hash IS 'ledger.event_hash over the exact stored bytes.';
ALTER SEQUENCE ledger.events_position_seq OWNED BY ledger.events.position;

-- The bound: a transaction that gets its id after this one's cannot
-- write below it, and one that got it before can write only after this
-- one commits (we hold the table), into events_0. The CHECK makes the
-- attach skip its own scan (adding it reads the table once). The range
-- partitions above are created by events/partitions.sql, which migrate
-- applies next; until then appends land in the default partition.
DO $$
DECLARE
    v_bound xid8 := pg_current_xact_id();
BEGIN
    EXECUTE format('ALTER TABLE ledger.events_0 ADD CONSTRAINT events_0_bound CHECK (tx_id < %L::xid8)', v_bound);
    EXECUTE format('ALTER TABLE ledger.events ATTACH PARTITION ledger.events_0 FOR VALUES FROM (MINVALUE) TO (%L)', v_bound);
END $$;
ALTER TABLE ledger.events_0 DROP CONSTRAINT events_0_bound;

CREATE TABLE ledger.events_default PARTITION OF ledger.events DEFAULT;
CREATE INDEX events_default_stream_idx ON ledger.events_default (stream, version);
CREATE UNIQUE INDEX events_default_delivery_idx ON ledger.events_default (tx_id, position);

-- The delivery order's index: the old one is the first partition's.
CREATE UNIQUE INDEX events_delivery_idx ON ONLY ledger.events (tx_id, position);
ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_0_delivery_idx;
ALTER INDEX ledger.events_delivery_idx ATTACH PARTITION ledger.events_default_delivery_idx;

REVOKE ALL ON ledger.events FROM PUBLIC;
GRANT SELECT ON ledger.events TO ledger_auditor, ledger_executor, ledger_admin;
REVOKE ALL ON ledger.events_0, ledger.events_default FROM PUBLIC;

-- Partitioning settings: the width of a range partition in transaction
-- ids, and how many are kept ahead of the current one.
CREATE TABLE ledger.event_partitioning (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    width bigint  NOT NULL DEFAULT 100000000 CHECK (width >= 1),
    ahead integer NOT NULL DEFAULT 2 CHECK (ahead BETWEEN 1 AND 100)
);
COMMENT ON TABLE ledger.event_partitioning IS 'The width (in transaction ids) of a range partition of ledger.events, and how many are created ahead.';
INSERT INTO ledger.event_partitioning DEFAULT VALUES;
REVOKE ALL ON ledger.event_partitioning FROM PUBLIC;
GRANT SELECT ON ledger.event_partitioning TO ledger_admin, ledger_auditor;
GRANT UPDATE (width, ahead) ON ledger.event_partitioning TO ledger_admin;

-- Each stream's newest version, moved by every append (the statement
-- trigger of events/advance_stream_heads.sql): what keeps (stream,
-- version) unique across partitions. Filled from the log here; one
-- index-ordered read.
CREATE TABLE ledger.stream_heads (
    stream  text   PRIMARY KEY,
    version bigint NOT NULL CHECK (version >= 1),
    -- the version before the newest append's first: carries the append's
    -- lower bound into ON CONFLICT's check (excluded.prior)
    prior   bigint NOT NULL CHECK (prior >= 0)
) WITH (fillfactor = 80);
COMMENT ON TABLE ledger.stream_heads IS 'Each stream''s newest version; keeps (stream, version) unique across the partitions of ledger.events.';
INSERT INTO ledger.stream_heads (stream, version, prior)
SELECT e.stream, max(e.version), 0 FROM ledger.events_0 e GROUP BY e.stream;
REVOKE ALL ON ledger.stream_heads FROM PUBLIC;
GRANT SELECT ON ledger.stream_heads TO ledger_auditor, ledger_admin;

-- Archived ranges (execledger archive): a detached partition's events,
-- exported to a bundle that verified against the checkpoint named, before
-- the detach. The tree keeps their leaves; range_hashes (the compact
-- range of leaves [first_leaf, last_leaf]) is what verify --db checks
-- them with against later checkpoints, instead of the rows.
CREATE TABLE ledger.event_archives (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partition_name  text        NOT NULL UNIQUE,
    from_tx_id      xid8        NOT NULL,
    to_tx_id        xid8        NOT NULL,
    first_position  bigint,
    last_position   bigint,
    first_leaf      bigint,
    last_leaf       bigint,
    events          bigint      NOT NULL CHECK (events >= 0),
    checkpoint_size bigint,
    range_hashes    bytea[],
    bundle_sha256   text        CHECK (bundle_sha256 ~ '^[0-9a-f]{64}$'),
    archived_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    archived_by     text        NOT NULL DEFAULT session_user,
    CONSTRAINT event_archives_leaves_check CHECK (
        events = 0 AND first_leaf IS NULL AND last_leaf IS NULL AND checkpoint_size IS NULL AND range_hashes IS NULL AND bundle_sha256 IS NULL
        OR events > 0 AND first_leaf >= 0 AND last_leaf - first_leaf + 1 = events AND checkpoint_size > last_leaf
           AND range_hashes IS NOT NULL AND bundle_sha256 IS NOT NULL AND first_position IS NOT NULL AND last_position IS NOT NULL)
);
COMMENT ON TABLE ledger.event_archives IS 'Detached partitions of ledger.events: their leaves, the checkpoint their bundle was proved against, the bundle''s SHA-256.';
REVOKE ALL ON ledger.event_archives FROM PUBLIC;
GRANT SELECT ON ledger.event_archives TO ledger_auditor, ledger_executor, ledger_admin;

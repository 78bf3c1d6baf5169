-- depends: events/partitions.sql

-- Archiving a partition of ledger.events (execledger archive,
-- docs/scaling.md). events_archive_plan says whether a partition is
-- closed, and which leaves it holds; events_archive_detach records the
-- archive and detaches the partition, once the bundle of those leaves
-- has verified. Only ledger_admin runs them: the events stay append-only
-- for every other role, and a detached partition is no longer the log.
--
-- Closed means: no transaction can still write into it (its range ends
-- at or below the oldest running transaction, which is also the delivery
-- horizon of ledger.read_all); the sealer and every asynchronous
-- projection, and any rebuild under way, have read past its last event;
-- and its events are exactly the leaves from its first event's leaf to
-- its last one's (every event sealed, none forged behind the sealer).

CREATE OR REPLACE FUNCTION ledger.events_archive_plan(p_partition text)
RETURNS TABLE (partition_name text, from_tx_id xid8, to_tx_id xid8, first_position bigint, last_position bigint,
               first_leaf bigint, last_leaf bigint, events bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    p record;
    v_xmin xid8 := pg_snapshot_xmin(pg_current_snapshot());
    v_proj record;
    v_unsealed bigint;
BEGIN
    SELECT * INTO p FROM ledger.event_partitions() x WHERE x.name = p_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not a partition of ledger.events', coalesce(p_partition, 'NULL')
            USING ERRCODE = 'no_data_found', HINT = 'execledger archive --list lists them';
    END IF;
    IF p.is_default THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is the default partition, which no range of transactions bounds; it is never archived', p_partition
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF p.to_tx_id > v_xmin THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not closed: transactions up to % may still write into it (the oldest running transaction is %)',
            p_partition, p.to_tx_id, v_xmin
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'archive it once the transaction ids in use have passed its range';
    END IF;
    partition_name := p_partition;
    from_tx_id := p.from_tx_id;
    to_tx_id := p.to_tx_id;
    events := 0;
    IF p.first_tx_id IS NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT x.name, x.mode, x.tx_id, x.position, x.rebuild_tx_id, x.rebuild_position INTO v_proj
    FROM ledger.projections x
    WHERE x.mode IN ('async', 'sealer')
      AND ((x.tx_id, x.position) < (p.last_tx_id, p.last_position)
           OR x.rebuild_tx_id IS NOT NULL AND (x.rebuild_tx_id, x.rebuild_position) < (p.last_tx_id, p.last_position))
    ORDER BY x.name
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % is not closed: % has not read past its last event (transaction %, position %)',
            p_partition,
            CASE WHEN v_proj.mode = 'sealer' THEN 'the Merkle log''s sealer (projection ' || v_proj.name || ')'
                 WHEN v_proj.rebuild_tx_id IS NOT NULL THEN 'the rebuild of projection ' || v_proj.name
                 ELSE 'projection ' || v_proj.name END,
            p.last_tx_id, p.last_position
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'execledger projector status shows how far each has read';
    END IF;
    first_position := p.first_position;
    last_position := p.last_position;
    SELECT l.leaf_index INTO first_leaf FROM ledger.log_leaves l WHERE l.position = p.first_position AND l.tx_id = p.first_tx_id;
    SELECT l.leaf_index INTO last_leaf FROM ledger.log_leaves l WHERE l.position = p.last_position AND l.tx_id = p.last_tx_id;
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (
        SELECT 1 FROM ledger.log_leaves l WHERE l.position = e.position AND l.tx_id = e.tx_id)) FROM ledger.%I e', p_partition)
        INTO events, v_unsealed;
    IF first_leaf IS NULL OR last_leaf IS NULL OR v_unsealed > 0 OR last_leaf - first_leaf + 1 <> events THEN
        RAISE EXCEPTION 'ledger.events_archive_plan: % holds % events, % of them not in the Merkle log, though the sealer has passed them (fault unsealed_event): it is not archived',
            p_partition, events, v_unsealed
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'execledger verify --db names them';
    END IF;
    RETURN NEXT;
END $$;

COMMENT ON FUNCTION ledger.events_archive_plan(p_partition text) IS 'Whether a partition of ledger.events is closed, and the leaves it holds; raises the reason when it is not.';
REVOKE ALL ON FUNCTION ledger.events_archive_plan(p_partition text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.events_archive_plan(p_partition text) TO ledger_admin;

-- events_archive_detach records the archive of a closed partition and
-- detaches it. p_range_hashes are the hashes of the compact range of its
-- leaves (compact.RangeNodes(first_leaf, last_leaf + 1)), computed from
-- the bundle that verified; they must be the tree's own nodes, and
-- p_checkpoint_size a checkpoint that covers the leaves. An empty closed
-- partition is detached with no bundle (the last three arguments NULL).

CREATE OR REPLACE FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text)
RETURNS SETOF ledger.event_archives
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '10s'
    AS $$
DECLARE
    a record;
    v_begin bigint;
    v_end bigint;
    v_level int;
    v_node bytea;
    i int := 0;
    r ledger.event_archives;
BEGIN
    SELECT * INTO a FROM ledger.events_archive_plan(p_partition);
    IF a.events > 0 THEN
        IF p_checkpoint_size IS NULL OR p_checkpoint_size <= a.last_leaf
           OR NOT EXISTS (SELECT 1 FROM ledger.checkpoints c WHERE c.size = p_checkpoint_size) THEN
            RAISE EXCEPTION 'ledger.events_archive_detach: % has leaves % to %; checkpoint % is not one of the log''s that covers them',
                p_partition, a.first_leaf, a.last_leaf, coalesce(p_checkpoint_size::text, 'NULL')
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_begin := a.first_leaf;
        v_end := a.last_leaf + 1;
        WHILE v_begin < v_end LOOP
            v_level := 0;
            WHILE v_level < 62 AND v_begin % (2::bigint << v_level) = 0 AND v_begin + (2::bigint << v_level) <= v_end LOOP
                v_level := v_level + 1;
            END LOOP;
            i := i + 1;
            SELECT n.hash INTO v_node FROM ledger.log_nodes n WHERE n.level = v_level AND n.idx = v_begin >> v_level;
            IF v_node IS NULL OR i > coalesce(cardinality(p_range_hashes), 0) OR p_range_hashes[i] IS DISTINCT FROM v_node THEN
                RAISE EXCEPTION 'ledger.events_archive_detach: the range hashes of leaves % to % are not the tree''s (node % at level %)',
                    a.first_leaf, a.last_leaf, v_begin >> v_level, v_level
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            v_begin := v_begin + (1::bigint << v_level);
        END LOOP;
        IF i <> cardinality(p_range_hashes) THEN
            RAISE EXCEPTION 'ledger.events_archive_detach: % range hashes for leaves % to %, which have %', cardinality(p_range_hashes), a.first_leaf, a.last_leaf, i
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_checkpoint_size IS NOT NULL OR p_range_hashes IS NOT NULL OR p_bundle_sha256 IS NOT NULL THEN
        RAISE EXCEPTION 'ledger.events_archive_detach: % holds no event: it is detached with no bundle', p_partition
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.event_archives (partition_name, from_tx_id, to_tx_id, first_position, last_position, first_leaf, last_leaf,
                                       events, checkpoint_size, range_hashes, bundle_sha256)
    VALUES (p_partition, coalesce(a.from_tx_id, '0'), a.to_tx_id, a.first_position, a.last_position, a.first_leaf, a.last_leaf,
            a.events, p_checkpoint_size, p_range_hashes, p_bundle_sha256)
    RETURNING * INTO r;
    EXECUTE format('ALTER TABLE ledger.events DETACH PARTITION ledger.%I', p_partition);
    RETURN NEXT r;
END $$;

COMMENT ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) IS 'Records the archive of a closed partition of ledger.events (ledger.event_archives) and detaches it.';
REVOKE ALL ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.events_archive_detach(p_partition text, p_checkpoint_size bigint, p_range_hashes bytea[], p_bundle_sha256 text) TO ledger_admin;

-- refuse_archived_rebuild stops what would read the log from its first
-- event (a projection's rebuild or verify) once part of it is archived:
-- the database no longer holds those events, and a read model built
-- without them would be wrong, not merely old.

CREATE OR REPLACE FUNCTION ledger.refuse_archived_rebuild(p_caller text, p_projection text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    a record;
BEGIN
    SELECT x.partition_name, x.first_leaf, x.last_leaf, x.bundle_sha256, count(*) OVER () AS n INTO a
    FROM ledger.event_archives x WHERE x.events > 0 ORDER BY x.first_leaf LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%: projection % is rebuilt from the log''s first event, and % archived partitions of the log are no longer in the database, the first % (leaves % to %, bundle sha256 %)',
            p_caller, p_projection, a.n, a.partition_name, a.first_leaf, a.last_leaf, a.bundle_sha256
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'the live read model keeps being applied from the newer events; to rebuild it, restore the archived partitions in a copy of the database (docs/scaling.md)';
    END IF;
END $$;

REVOKE ALL ON FUNCTION ledger.refuse_archived_rebuild(p_caller text, p_projection text) FROM PUBLIC;

-- 011: the Merkle log. Every committed event becomes a leaf of an RFC 6962
-- tree in the order ledger.read_all delivers (leaf indexes 0, 1, 2, … with
-- no gaps), and signed checkpoints (C2SP tlog-checkpoint notes) commit to
-- the tree's root. Anyone who changes, drops or reorders an event after it
-- was sealed, a superuser included, no longer matches a checkpoint that an
-- auditor or a witness holds.
--
-- The sealer is the projection "log" (mode 'sealer') of the projection
-- engine: one runner across all serve processes holds its lock, reads the
-- events after its checkpoint, computes the leaf and node hashes in Go
-- (transparency-dev/merkle) and hands them to ledger.log_append, which
-- assigns the leaf indexes itself, in delivery order, and moves the
-- checkpoint in the same transaction. Only the hashes are the caller's:
-- which events become which leaves is the database's.

-- log_leaves maps each leaf index to its event, by (tx_id, position), the
-- key of events_delivery_idx: reading leaves in order reads the events in
-- delivery order. The event's bytes are in ledger.events; its leaf hash is
-- log_nodes (level 0, leaf_index).
CREATE TABLE ledger.log_leaves (
    leaf_index bigint PRIMARY KEY,
    tx_id      xid8   NOT NULL,
    "position" bigint NOT NULL,
    CONSTRAINT log_leaves_index_check CHECK (leaf_index >= 0)
);
CREATE UNIQUE INDEX log_leaves_position_idx ON ledger.log_leaves ("position");
COMMENT ON TABLE ledger.log_leaves IS 'Merkle log: leaf index -> the event (tx_id, position), in ledger.read_all order, dense from 0.';

-- log_nodes holds the hash of every perfect subtree of the tree: level 0
-- the leaves, level l the node over leaves [idx * 2^l, (idx + 1) * 2^l).
-- That is about two rows per leaf, written once, and any inclusion or
-- consistency proof is O(log n) of them (compact ranges; see
-- transparency-dev/merkle's proof.Nodes).
CREATE TABLE ledger.log_nodes (
    level smallint NOT NULL,
    idx   bigint   NOT NULL,
    hash  bytea    NOT NULL,
    CONSTRAINT log_nodes_pkey PRIMARY KEY (level, idx),
    CONSTRAINT log_nodes_check CHECK (level BETWEEN 0 AND 63 AND idx >= 0 AND octet_length(hash) = 32)
);
COMMENT ON TABLE ledger.log_nodes IS 'Merkle log: RFC 6962 hashes of the perfect subtrees (level 0: leaf hashes).';

-- checkpoints are the signed notes, one per signed tree size.
-- published_at is set when the checkpoint counts as published: at once
-- when serve requires no witness, else when its required cosignatures are
-- in checkpoint_cosignatures.
CREATE TABLE ledger.checkpoints (
    size         bigint      PRIMARY KEY,
    root_hash    bytea       NOT NULL,
    origin       text        NOT NULL,
    note         text        NOT NULL,
    signed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at timestamptz,
    CONSTRAINT checkpoints_check CHECK (size > 0 AND octet_length(root_hash) = 32 AND octet_length(note) <= 65536)
);
COMMENT ON TABLE ledger.checkpoints IS 'Merkle log: signed checkpoints (C2SP tlog-checkpoint notes), recorded also as checkpoint.signed on stream log.';

-- A witness's cosignature of a checkpoint (C2SP tlog-cosignature): the
-- signature line's key name, key hash and base64 signature.
CREATE TABLE ledger.checkpoint_cosignatures (
    size        bigint      NOT NULL REFERENCES ledger.checkpoints (size),
    key_name    text        NOT NULL,
    key_hash    bigint      NOT NULL,
    signature   text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    recorded_by text        NOT NULL DEFAULT session_user,
    CONSTRAINT checkpoint_cosignatures_pkey PRIMARY KEY (size, key_name, key_hash),
    CONSTRAINT checkpoint_cosignatures_check CHECK (
        key_name ~ '^[^[:space:]+]+$' AND octet_length(key_name) <= 256
        AND key_hash BETWEEN 0 AND 4294967295
        AND signature ~ '^[A-Za-z0-9+/]+=*$' AND octet_length(signature) <= 8192)
);
COMMENT ON TABLE ledger.checkpoint_cosignatures IS 'Merkle log: witness cosignatures of checkpoints.';

-- Like the events, the log is written once: rows are never changed or
-- removed (a checkpoint's published_at aside, set once).
CREATE FUNCTION ledger.refuse_log_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'checkpoints' AND OLD.published_at IS NULL
       AND (NEW.size, NEW.root_hash, NEW.origin, NEW.note, NEW.signed_at) = (OLD.size, OLD.root_hash, OLD.origin, OLD.note, OLD.signed_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ledger.%: % is not allowed, the Merkle log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['log_leaves', 'log_nodes', 'checkpoints', 'checkpoint_cosignatures'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON ledger.%I FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change()', t || '_append_only', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON ledger.%I FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change()', t || '_no_truncate', t);
        EXECUTE format('ALTER TABLE ledger.%I ENABLE ALWAYS TRIGGER %I', t, t || '_append_only');
        EXECUTE format('ALTER TABLE ledger.%I ENABLE ALWAYS TRIGGER %I', t, t || '_no_truncate');
    END LOOP;
END $$;

-- The sealer is a projection of its own kind: the engine's lock and
-- checkpoint, but moved only by ledger.log_append; it cannot be rebuilt.
ALTER TABLE ledger.projections DROP CONSTRAINT projections_mode_check,
    ADD CONSTRAINT projections_mode_check CHECK (mode IN ('inline', 'async', 'sealer'));
COMMENT ON COLUMN ledger.projections.mode IS 'inline: applied by the writers in their transactions; async: by the engine; sealer: the Merkle log.';
INSERT INTO ledger.projections (name, mode, tables) VALUES ('log', 'sealer', ARRAY['log_leaves', 'log_nodes'])
ON CONFLICT (name) DO UPDATE SET mode = EXCLUDED.mode, tables = EXCLUDED.tables;

-- log_size is the number of leaves: the tree's size.
CREATE FUNCTION ledger.log_size() RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT l.leaf_index + 1 FROM ledger.log_leaves l ORDER BY l.leaf_index DESC LIMIT 1), 0)
$$;

-- log_append seals the events after the log's checkpoint (p_from) up to
-- and including p_to: they become leaves p_size, p_size + 1, … in
-- delivery order, and the nodes the caller computed for them (levels,
-- indexes, hashes: every perfect subtree the new leaves complete, the
-- leaves themselves at level 0) are stored. It moves the checkpoint and
-- returns the new size. A checkpoint or size other than the caller's is
-- SQLSTATE 40001 (another sealer moved, or the caller's state is stale);
-- a batch that is not exactly the next events delivered, or nodes that
-- are not exactly the new leaves' level-0 hashes, are refused (22023).
CREATE FUNCTION ledger.log_append(p_from_tx xid8, p_from_pos bigint, p_to_tx xid8, p_to_pos bigint, p_size bigint,
                                  p_levels smallint[], p_indexes bigint[], p_hashes bytea[])
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n       bigint;
    n_leaf  bigint;
    v_lo    bigint;
    v_hi    bigint;
BEGIN
    IF (p_to_tx, p_to_pos) <= (p_from_tx, p_from_pos) THEN
        RAISE EXCEPTION 'ledger.log_append: the batch must move forward, from (%, %) to (%, %)', p_from_tx, p_from_pos, p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_to_tx >= pg_snapshot_xmin(pg_current_snapshot()) THEN
        RAISE EXCEPTION 'ledger.log_append: (%, %) is not below the delivery horizon yet', p_to_tx, p_to_pos
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE ledger.projections p
    SET tx_id = p_to_tx, position = p_to_pos, updated_at = clock_timestamp()
    WHERE p.name = 'log' AND p.state = 'active' AND p.tx_id = p_from_tx AND p.position = p_from_pos;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.log_append: the log is not active at (%, %)', p_from_tx, p_from_pos
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF ledger.log_size() <> p_size THEN
        RAISE EXCEPTION 'ledger.log_append: the log has % leaves, not %', ledger.log_size(), p_size
            USING ERRCODE = 'serialization_failure';
    END IF;

    INSERT INTO ledger.log_leaves (leaf_index, tx_id, "position")
    SELECT p_size - 1 + row_number() OVER (ORDER BY e.tx_id, e.position), e.tx_id, e.position
    FROM ledger.events e
    WHERE e.tx_id BETWEEN p_from_tx AND p_to_tx
      AND (e.tx_id, e.position) > (p_from_tx, p_from_pos)
      AND (e.tx_id, e.position) <= (p_to_tx, p_to_pos);
    GET DIAGNOSTICS n = ROW_COUNT;

    IF cardinality(p_levels) IS DISTINCT FROM cardinality(p_indexes) OR cardinality(p_levels) IS DISTINCT FROM cardinality(p_hashes) THEN
        RAISE EXCEPTION 'ledger.log_append: levels, indexes and hashes must have the same length'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT count(*) FILTER (WHERE u.l = 0), min(u.i) FILTER (WHERE u.l = 0), max(u.i) FILTER (WHERE u.l = 0)
    INTO n_leaf, v_lo, v_hi
    FROM unnest(p_levels, p_indexes) AS u(l, i);
    IF n = 0 OR n_leaf <> n OR v_lo <> p_size OR v_hi <> p_size + n - 1 THEN
        RAISE EXCEPTION 'ledger.log_append: % events follow (%, %) up to (%, %), the batch has % leaf hashes for leaves % to %',
            n, p_from_tx, p_from_pos, p_to_tx, p_to_pos, n_leaf, v_lo, v_hi
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.log_nodes (level, idx, hash)
    SELECT u.l, u.i, u.h FROM unnest(p_levels, p_indexes, p_hashes) AS u(l, i, h);

    UPDATE ledger.projections SET applied_total = applied_total + n WHERE name = 'log';
    RETURN p_size + n;
END $$;

-- log_checkpoint records a signed checkpoint of the tree at p_size (the
-- log's size, or less) and appends checkpoint.signed to stream log, in the
-- caller's transaction. Sizes only grow. p_published: no witness is
-- required, the checkpoint is published as it is signed.
CREATE FUNCTION ledger.log_checkpoint(p_size bigint, p_root bytea, p_note text, p_published boolean)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_origin text := split_part(p_note, E'\n', 1);
    v_last   bigint;
    v_ver    bigint;
BEGIN
    PERFORM 1 FROM ledger.projections p WHERE p.name = 'log' FOR UPDATE;
    SELECT max(c.size) INTO v_last FROM ledger.checkpoints c;
    IF p_size < 1 OR p_size > ledger.log_size() OR p_size <= coalesce(v_last, 0) THEN
        RAISE EXCEPTION 'ledger.log_checkpoint: size % is not between the last checkpoint''s (%) and the log''s (%)',
            p_size, coalesce(v_last, 0), ledger.log_size()
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF split_part(p_note, E'\n', 2) <> p_size::text OR split_part(p_note, E'\n', 3) <> encode(p_root, 'base64') THEN
        RAISE EXCEPTION 'ledger.log_checkpoint: the note does not carry size % and its root hash', p_size
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO ledger.checkpoints (size, root_hash, origin, note, published_at)
    VALUES (p_size, p_root, v_origin, p_note, CASE WHEN p_published THEN clock_timestamp() END);
    SELECT coalesce(max(e.version), 0) + 1 INTO v_ver FROM ledger.events e WHERE e.stream = 'log';
    INSERT INTO ledger.events (stream, version, type, payload, metadata)
    VALUES ('log', v_ver, 'checkpoint.signed',
            json_build_object('origin', v_origin, 'size', p_size, 'root_hash', encode(p_root, 'base64'), 'note', p_note),
            json_build_object('actor', session_user));
    RETURN v_ver;
END $$;

-- log_cosign stores a witness's cosignature of checkpoint p_size. The
-- database cannot check an Ed25519 signature: verifiers do, with the
-- witness keys they trust; a junk line is ignored by them. One line per
-- witness key and checkpoint (a repeat is a no-op), at most 64 per
-- checkpoint. Returns whether the line was new.
CREATE FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM 1 FROM ledger.checkpoints c WHERE c.size = p_size FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger.log_cosign: no checkpoint of size %', p_size USING ERRCODE = 'no_data_found';
    END IF;
    IF (SELECT count(*) FROM ledger.checkpoint_cosignatures s WHERE s.size = p_size) >= 64 THEN
        RAISE EXCEPTION 'ledger.log_cosign: checkpoint % has 64 cosignatures already', p_size USING ERRCODE = 'program_limit_exceeded';
    END IF;
    INSERT INTO ledger.checkpoint_cosignatures (size, key_name, key_hash, signature)
    VALUES (p_size, p_key_name, p_key_hash, p_signature)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n = 1;
END $$;

-- log_publish marks checkpoint p_size published (its witnesses have
-- cosigned it, as the sealer has checked).
CREATE FUNCTION ledger.log_publish(p_size bigint) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE ledger.checkpoints SET published_at = clock_timestamp() WHERE size = p_size AND published_at IS NULL;
    RETURN FOUND;
END $$;

-- The rebuild functions refuse the log: its leaves and nodes are not
-- derived state that can be thrown away and built again, they are what
-- the signed checkpoints commit to.
CREATE OR REPLACE FUNCTION ledger.projection_rebuild_begin(p_name text) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, ledger, pg_temp
AS $$
DECLARE
    p record;
    t text;
BEGIN
    SELECT * INTO p FROM ledger.projections x WHERE x.name = p_name FOR UPDATE;
    IF NOT FOUND OR cardinality(p.tables) = 0 THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: no SQL projection %', p_name USING ERRCODE = 'no_data_found';
    END IF;
    IF p.mode = 'sealer' THEN
        RAISE EXCEPTION 'ledger.projection_rebuild_begin: % is the Merkle log, which signed checkpoints commit to; it is never rebuilt', p_name
            USING ERRCODE = 'feature_not_supported', HINT = 'execledger verify --db checks it from the first leaf';
    END IF;
    -- Shadow tables are unlogged (a rebuild writes each row twice, once
    -- there and once in the swap), and PostgreSQL empties unlogged tables
    -- when it recovers from a crash: a rebuild begun before the server
    -- last started is begun again.
    IF p.rebuild_tx_id IS NOT NULL AND p.rebuild_started_at > pg_postmaster_start_time() AND NOT EXISTS (
        SELECT 1 FROM unnest(p.tables) x WHERE to_regclass(format('ledger_rebuild.%I', x)) IS NULL) THEN
        RETURN 'resumed';
    END IF;
    FOREACH t IN ARRAY p.tables LOOP
        EXECUTE format('DROP TABLE IF EXISTS ledger_rebuild.%I', t);
        EXECUTE format('CREATE UNLOGGED TABLE ledger_rebuild.%I (LIKE ledger.%I INCLUDING ALL)', t, t);
    END LOOP;
    UPDATE ledger.projections
    SET rebuild_tx_id = '0', rebuild_position = 0, rebuild_applied = 0, rebuild_started_at = clock_timestamp()
    WHERE name = p_name;
    PERFORM ledger.projection_event(p_name, 'projection.rebuild_started', json_build_object('projection', p_name));
    RETURN 'started';
END $$;

REVOKE ALL ON ledger.log_leaves, ledger.log_nodes, ledger.checkpoints, ledger.checkpoint_cosignatures FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.refuse_log_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_size() FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_append(xid8, bigint, xid8, bigint, bigint, smallint[], bigint[], bytea[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_checkpoint(bigint, bytea, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_cosign(bigint, text, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION ledger.log_publish(bigint) FROM PUBLIC;

GRANT SELECT ON ledger.log_leaves, ledger.log_nodes, ledger.checkpoints, ledger.checkpoint_cosignatures
    TO ledger_executor, ledger_auditor, ledger_admin;
GRANT EXECUTE ON FUNCTION ledger.log_size() TO ledger_executor, ledger_auditor, ledger_admin;
-- The sealer runs in serve, as the executor's login.
GRANT EXECUTE ON FUNCTION ledger.log_append(xid8, bigint, xid8, bigint, bigint, smallint[], bigint[], bytea[]) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.log_checkpoint(bigint, bytea, text, boolean) TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.log_publish(bigint) TO ledger_executor;
-- Witnesses run as auditors (or admins).
GRANT EXECUTE ON FUNCTION ledger.log_cosign(bigint, text, bigint, text) TO ledger_auditor, ledger_admin;

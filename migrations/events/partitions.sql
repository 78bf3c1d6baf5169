-- The partitions of ledger.events (024): ranges of tx_id, oldest first.
-- event_partitions lists them with their bounds and first and last
-- events (by the delivery index: two probes each);
-- events_partition_ahead creates range partitions ahead of need.

CREATE OR REPLACE FUNCTION ledger.event_partitions()
RETURNS TABLE (name text, from_tx_id xid8, to_tx_id xid8, is_default boolean,
               first_tx_id xid8, first_position bigint, last_tx_id xid8, last_position bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    p record;
BEGIN
    FOR p IN
        SELECT c.relname::text AS relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'ledger.events'::regclass
    LOOP
        name := p.relname;
        is_default := p.bound = 'DEFAULT';
        from_tx_id := (regexp_match(p.bound, 'FROM \(''(\d+)''\)'))[1]::xid8;
        to_tx_id := (regexp_match(p.bound, 'TO \(''(\d+)''\)'))[1]::xid8;
        EXECUTE format('SELECT e.tx_id, e.position FROM ledger.%I e ORDER BY e.tx_id, e.position LIMIT 1', p.relname)
            INTO first_tx_id, first_position;
        EXECUTE format('SELECT e.tx_id, e.position FROM ledger.%I e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1', p.relname)
            INTO last_tx_id, last_position;
        RETURN NEXT;
    END LOOP;
END $$;

COMMENT ON FUNCTION ledger.event_partitions() IS 'The partitions of ledger.events: tx_id bounds (NULL: unbounded), first and last event in delivery order.';
REVOKE ALL ON FUNCTION ledger.event_partitions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.event_partitions() TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.event_partitions() TO ledger_admin;

-- events_partition_ahead creates the range partitions that will be
-- needed next: until the newest ends at least ledger.event_partitioning's
-- `ahead` widths above the next transaction id. Ranges end at multiples of
-- the width. It returns how many it
-- created. A new range starts where the newest ends, or above the default
-- partition's newest row if appends have outrun it (those rows stay in the
-- default partition, which takes anything no range covers: appends never
-- fail for want of a partition), or at the oldest running transaction if
-- the newest range ended below it (after a long time without a call). Each partition is created on its own and
-- attached, which locks the parent only against other DDL; the default
-- partition is locked while the attach checks it holds nothing of the new
-- range, for at most lock_timeout: if a reader holds it, the call creates
-- nothing and the next one tries again. The sealer calls it at each audit
-- (ledger.Sealer), so serve keeps partitions ahead by itself.

CREATE OR REPLACE FUNCTION ledger.events_partition_ahead() RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '2s'
    AS $$
DECLARE
    v_width numeric;
    v_ahead int;
    v_next numeric := pg_snapshot_xmax(pg_current_snapshot())::text::numeric;
    v_top numeric;
    v_default numeric;
    v_lo numeric;
    v_hi numeric;
    v_name text;
    v_made int := 0;
BEGIN
    SELECT s.width, s.ahead INTO v_width, v_ahead FROM ledger.event_partitioning s;
    LOOP
        SELECT max(p.to_tx_id::text::numeric) INTO v_top FROM ledger.event_partitions() p WHERE NOT p.is_default;
        EXIT WHEN v_top >= v_next + v_ahead * v_width;
        SELECT max(e.tx_id)::text::numeric INTO v_default FROM ledger.events_default e;
        -- No transaction below the oldest running one writes again:
        -- a range that starts there leaves out only ids that are done.
        v_lo := greatest(v_top, coalesce(v_default + 1, 0), pg_snapshot_xmin(pg_current_snapshot())::text::numeric);
        -- Ranges end at multiples of the width, so the partitions a call
        -- makes do not depend on the moment it runs within a width.
        v_hi := (floor(v_lo / v_width) + 1) * v_width;
        v_name := 'events_' || v_lo::text;
        BEGIN
            EXECUTE format('CREATE TABLE ledger.%I (LIKE ledger.events INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('ALTER TABLE ledger.%I ADD CONSTRAINT %I CHECK (tx_id >= %L::xid8 AND tx_id < %L::xid8)',
                           v_name, v_name || '_bound', v_lo::text, v_hi::text);
            EXECUTE format('CREATE INDEX %I ON ledger.%I (stream, version)', v_name || '_stream_idx', v_name);
            EXECUTE format('CREATE UNIQUE INDEX %I ON ledger.%I (tx_id, position)', v_name || '_delivery_idx', v_name);
            EXECUTE format('REVOKE ALL ON ledger.%I FROM PUBLIC', v_name);
            EXECUTE format('ALTER TABLE ledger.events ATTACH PARTITION ledger.%I FOR VALUES FROM (%L) TO (%L)',
                           v_name, v_lo::text, v_hi::text);
            EXECUTE format('ALTER TABLE ledger.%I DROP CONSTRAINT %I', v_name, v_name || '_bound');
        EXCEPTION WHEN lock_not_available THEN
            RETURN v_made;
        END;
        v_made := v_made + 1;
    END LOOP;
    RETURN v_made;
END $$;

COMMENT ON FUNCTION ledger.events_partition_ahead() IS 'Creates the range partitions of ledger.events needed next (ledger.event_partitioning); returns how many.';
REVOKE ALL ON FUNCTION ledger.events_partition_ahead() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.events_partition_ahead() TO ledger_executor;
GRANT EXECUTE ON FUNCTION ledger.events_partition_ahead() TO ledger_admin;

-- Migrate creates the partitions needed next too (the first ones after 024).
SELECT ledger.events_partition_ahead();

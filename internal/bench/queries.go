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

// river-audited's audit log (river_audited.go): the schema, created after
// River's, and the one call that appends to it.
const (
	// queryAuditSchema creates the audit table, insert-only by trigger
	// (the benchmark's role owns the table and is a superuser, so REVOKE
	// alone would not hold it), and river_audit_append. $1 is the number
	// of chains.
	//
	// A row's hash is sha256(prev_hash || content), content being the text
	// chain|seq|job_id|event|args_digest|output_digest|signature|recorded_at
	// (digests and signature in hex, empty when NULL; recorded_at in
	// microseconds since 1970); the first row of a chain has 32 zero bytes
	// as prev_hash. auditRowHash in Go is the same definition.
	queryAuditSchema = `
CREATE TABLE river_audit_settings (
    chains integer NOT NULL CHECK (chains > 0),
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row)
);

CREATE TABLE river_audit (
    chain         integer     NOT NULL,
    seq           bigint      NOT NULL CHECK (seq > 0),
    job_id        bigint      NOT NULL,
    event         text        NOT NULL CHECK (event IN ('inserted', 'started', 'completed')),
    args_digest   bytea       NOT NULL,
    output_digest bytea,
    signature     bytea,
    recorded_at   timestamptz NOT NULL,
    prev_hash     bytea       NOT NULL,
    hash          bytea       NOT NULL,
    PRIMARY KEY (chain, seq),
    CHECK ((event = 'completed') = (output_digest IS NOT NULL AND signature IS NOT NULL))
);
CREATE INDEX river_audit_job ON river_audit (job_id);

CREATE FUNCTION river_audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'river_audit is insert-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER river_audit_insert_only BEFORE UPDATE OR DELETE ON river_audit
    FOR EACH ROW EXECUTE FUNCTION river_audit_refuse();
CREATE TRIGGER river_audit_no_truncate BEFORE TRUNCATE ON river_audit
    FOR EACH STATEMENT EXECUTE FUNCTION river_audit_refuse();
CREATE TRIGGER river_audit_settings_fixed BEFORE UPDATE OR DELETE ON river_audit_settings
    FOR EACH ROW EXECUTE FUNCTION river_audit_refuse();
REVOKE UPDATE, DELETE, TRUNCATE ON river_audit, river_audit_settings FROM PUBLIC;

-- river_audit_append appends one row per job to the job's chain (job_id
-- mod chains), its args digest read from river_job in the caller's
-- transaction. Each chain is locked by a transaction-level advisory lock
-- until the caller commits, taken in ascending chain order, so that rows
-- of one chain are appended one transaction after another (the lock is
-- released only once the commit is visible, so the next holder reads the
-- tail it must chain to) and two batch inserts cannot deadlock.
CREATE FUNCTION river_audit_append(p_jobs bigint[], p_event text,
                                   p_output_digests bytea[] DEFAULT NULL, p_signatures bytea[] DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_chains integer;
    v_chain  integer := -1;
    v_seq    bigint;
    v_prev   bytea;
    v_at     timestamptz;
    v_hash   bytea;
    v_rows   integer := 0;
    r        record;
BEGIN
    SELECT chains INTO STRICT v_chains FROM river_audit_settings;
    FOR r IN
        SELECT u.job_id, (u.job_id % v_chains)::integer AS chain, u.output_digest, u.signature,
               sha256(convert_to(j.args::text, 'UTF8')) AS args_digest
        FROM unnest(p_jobs, p_output_digests, p_signatures) AS u(job_id, output_digest, signature)
        JOIN river_job j ON j.id = u.job_id
        ORDER BY 2, 1
    LOOP
        IF r.chain <> v_chain THEN
            v_chain := r.chain;
            PERFORM pg_advisory_xact_lock(24, v_chain); -- 24: this baseline's lock space (issue 24)
            SELECT a.seq, a.hash INTO v_seq, v_prev FROM river_audit a
            WHERE a.chain = v_chain ORDER BY a.seq DESC LIMIT 1;
            IF NOT FOUND THEN
                v_seq := 0;
                v_prev := decode(repeat('00', 32), 'hex');
            END IF;
        END IF;
        v_seq := v_seq + 1;
        v_at := clock_timestamp();
        v_hash := sha256(v_prev || convert_to(format('%s|%s|%s|%s|%s|%s|%s|%s', v_chain, v_seq, r.job_id, p_event,
            encode(r.args_digest, 'hex'), coalesce(encode(r.output_digest, 'hex'), ''),
            coalesce(encode(r.signature, 'hex'), ''), (extract(epoch FROM v_at) * 1000000)::bigint), 'UTF8'));
        INSERT INTO river_audit (chain, seq, job_id, event, args_digest, output_digest, signature, recorded_at, prev_hash, hash)
        VALUES (v_chain, v_seq, r.job_id, p_event, r.args_digest, r.output_digest, r.signature, v_at, v_prev, v_hash);
        v_prev := v_hash;
        v_rows := v_rows + 1;
    END LOOP;
    IF v_rows <> cardinality(p_jobs) THEN
        RAISE EXCEPTION 'river_audit_append: % of % jobs not found', cardinality(p_jobs) - v_rows, cardinality(p_jobs);
    END IF;
END $$;`

	queryAuditSettings = `INSERT INTO river_audit_settings (chains) VALUES ($1)`

	queryAuditAppend = `SELECT river_audit_append($1, $2, $3, $4)`

	// queryAuditRows reads the chains in order, for the verifier.
	queryAuditRows = `SELECT chain, seq, job_id, event, args_digest, output_digest, signature, recorded_at, prev_hash, hash
FROM river_audit ORDER BY chain, seq`

	queryAuditChains = `SELECT chains FROM river_audit_settings`

	// queryAuditJobs is every job with the digest of its args as stored.
	queryAuditJobs = `SELECT id, state::text, sha256(convert_to(args::text, 'UTF8')) FROM river_job`

	queryAuditCount = `SELECT count(*) FROM river_audit`
)

-- 010: ledger_reader, a read-only role for dashboards.
--
-- Grafana's PostgreSQL data source runs whatever SQL a dashboard holds,
-- so the login it uses may read what the dashboards show and nothing
-- else: the quota read models, every principal's rows, and the
-- projections' checkpoints. Not the log, requests, principals, the audit
-- trail or the functions of the SQL API. Like the other roles it is
-- cluster-wide and NOLOGIN; an operator grants it to a login of its own
-- (README, "A read-only login for Grafana").
--
-- A rebuild swaps a read model in by copying rows into the live tables,
-- so these grants and policies outlive it.

DO $$
BEGIN
    CREATE ROLE ledger_reader NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END $$;

GRANT USAGE ON SCHEMA ledger TO ledger_reader;
GRANT SELECT ON ledger.quota_usage, ledger.quota_usage_runs, ledger.quota_denials, ledger.quota_usage_buckets,
    ledger.projections TO ledger_reader;

-- The quota tables have row-level security (a submitter reads its own
-- principal's rows); a dashboard reads all of them.
CREATE POLICY quota_usage_reader ON ledger.quota_usage FOR SELECT TO ledger_reader USING (true);
CREATE POLICY quota_usage_runs_reader ON ledger.quota_usage_runs FOR SELECT TO ledger_reader USING (true);
CREATE POLICY quota_denials_reader ON ledger.quota_denials FOR SELECT TO ledger_reader USING (true);
CREATE POLICY quota_usage_buckets_reader ON ledger.quota_usage_buckets FOR SELECT TO ledger_reader USING (true);

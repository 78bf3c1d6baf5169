-- depends: api/current_principal.sql

DROP POLICY IF EXISTS quota_usage_runs_all ON ledger.quota_usage_runs;
CREATE POLICY quota_usage_runs_all ON ledger.quota_usage_runs FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);

DROP POLICY IF EXISTS quota_usage_runs_own ON ledger.quota_usage_runs;
CREATE POLICY quota_usage_runs_own ON ledger.quota_usage_runs FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));

DROP POLICY IF EXISTS quota_usage_runs_reader ON ledger.quota_usage_runs;
CREATE POLICY quota_usage_runs_reader ON ledger.quota_usage_runs FOR SELECT TO ledger_reader USING (true);

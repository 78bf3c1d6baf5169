-- depends: api/current_principal.sql

DROP POLICY IF EXISTS quota_denial_buckets_all ON ledger.quota_denial_buckets;
CREATE POLICY quota_denial_buckets_all ON ledger.quota_denial_buckets FOR SELECT TO ledger_executor, ledger_auditor, ledger_admin USING (true);

DROP POLICY IF EXISTS quota_denial_buckets_own ON ledger.quota_denial_buckets;
CREATE POLICY quota_denial_buckets_own ON ledger.quota_denial_buckets FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));

DROP POLICY IF EXISTS quota_denial_buckets_reader ON ledger.quota_denial_buckets;
CREATE POLICY quota_denial_buckets_reader ON ledger.quota_denial_buckets FOR SELECT TO ledger_reader USING (true);

-- depends: api/current_principal.sql

DROP POLICY IF EXISTS request_status_all ON ledger.request_status;
CREATE POLICY request_status_all ON ledger.request_status FOR SELECT TO ledger_approver, ledger_executor, ledger_auditor, ledger_admin USING (true);

DROP POLICY IF EXISTS request_status_own ON ledger.request_status;
CREATE POLICY request_status_own ON ledger.request_status FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));

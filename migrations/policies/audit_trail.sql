-- depends: api/current_principal.sql

DROP POLICY IF EXISTS audit_trail_all ON ledger.audit_trail;
CREATE POLICY audit_trail_all ON ledger.audit_trail FOR SELECT TO ledger_auditor, ledger_admin USING (true);

DROP POLICY IF EXISTS audit_trail_own ON ledger.audit_trail;
CREATE POLICY audit_trail_own ON ledger.audit_trail FOR SELECT TO ledger_submitter USING ((principal = ( SELECT ledger.current_principal() AS current_principal)));

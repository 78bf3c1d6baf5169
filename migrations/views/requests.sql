CREATE OR REPLACE VIEW ledger.requests WITH (security_invoker='true') AS
 SELECT r.id,
    r.principal,
    r.tool,
    r.run_id,
    r.state,
    r.error_kind,
    r.error,
    r.output,
    r.tier,
    r.attestation_digest,
    r.submitted_at,
    r.finished_at
   FROM ledger.request_status r;

COMMENT ON VIEW ledger.requests IS 'One row per request; a submitter sees only its own principal''s rows.';

GRANT SELECT ON TABLE ledger.requests TO ledger_submitter;
GRANT SELECT ON TABLE ledger.requests TO ledger_approver;
GRANT SELECT ON TABLE ledger.requests TO ledger_executor;
GRANT SELECT ON TABLE ledger.requests TO ledger_auditor;
GRANT SELECT ON TABLE ledger.requests TO ledger_admin;

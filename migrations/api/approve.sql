-- depends: api/decide_approval.sql

-- approve lets a request that waits for approval run. The approver is a
-- principal holding ledger_approver and never the submitter; the approval
-- is bound to the digest of the input the approver saw (input_digest as
-- shown in the tool.requested event: "sha256:<hex>"), so it cannot be
-- replayed for other input. With input_digest NULL the current input is
-- approved as is.

CREATE OR REPLACE FUNCTION ledger.approve(request_id uuid, note text DEFAULT NULL::text, input_digest text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM ledger.decide_approval(request_id, true, note, input_digest);
END $$;

REVOKE ALL ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.approve(request_id uuid, note text, input_digest text) TO ledger_approver;

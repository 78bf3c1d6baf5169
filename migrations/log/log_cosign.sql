-- log_cosign stores a witness's cosignature of checkpoint p_size. The
-- database cannot check an Ed25519 signature: verifiers do, with the
-- witness keys they trust; a junk line is ignored by them. One line per
-- witness key and checkpoint (a repeat is a no-op), at most 64 per
-- checkpoint. Returns whether the line was new.

CREATE OR REPLACE FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

REVOKE ALL ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) TO ledger_auditor;
GRANT EXECUTE ON FUNCTION ledger.log_cosign(p_size bigint, p_key_name text, p_key_hash bigint, p_signature text) TO ledger_admin;

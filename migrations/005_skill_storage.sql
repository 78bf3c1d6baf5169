-- 005: the key-value store of tier A skills' storage capability.

-- One row per key. Keys already begin with the storage prefix the call was
-- granted (wasmrun prefixes them), and prefixes are granted by the
-- operator's policy and the skill's registration, so the key alone
-- identifies a value: two skills granted the same prefix share it, by
-- design, and no principal column is needed. Executors write it, each put
-- committing on its own. Writes are not events, and no column names the
-- writer (wasmrun's Storage.Put carries no request id): the request's
-- stream records each use as capability.used {class, handle, name, key,
-- outcome}, which is where to look for who wrote a key.
CREATE TABLE ledger.skill_storage (
    key        text        PRIMARY KEY,
    value      bytea       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- wasmrun.MaxStorageKey. Values are bounded by wasmrun
    -- (MaxStorageValue before redaction, which may lengthen them).
    CONSTRAINT skill_storage_key_check CHECK (octet_length(key) BETWEEN 1 AND 512)
);
COMMENT ON TABLE ledger.skill_storage IS 'Values of tier A skills'' storage capability; keys begin with the granted prefix.';

REVOKE ALL ON ledger.skill_storage FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE ON ledger.skill_storage TO ledger_executor;
GRANT SELECT ON ledger.skill_storage TO ledger_auditor, ledger_admin;

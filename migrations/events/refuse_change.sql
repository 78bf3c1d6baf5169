-- Immutability. The triggers are ENABLE ALWAYS so that a session with
-- session_replication_role = replica does not slip past them either; only
-- dropping or disabling a trigger (DDL, which the Merkle log exposes) does.

CREATE OR REPLACE FUNCTION ledger.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'ledger.%: % is not allowed, the event log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'append a compensating event instead';
END $$;

REVOKE ALL ON FUNCTION ledger.refuse_change() FROM PUBLIC;

CREATE OR REPLACE TRIGGER events_no_delete BEFORE DELETE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_delete;

CREATE OR REPLACE TRIGGER events_no_truncate BEFORE TRUNCATE ON ledger.events FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_truncate;

CREATE OR REPLACE TRIGGER events_no_update BEFORE UPDATE ON ledger.events FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.events ENABLE ALWAYS TRIGGER events_no_update;

CREATE OR REPLACE TRIGGER skill_artifacts_append_only BEFORE DELETE OR UPDATE ON ledger.skill_artifacts FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_artifacts ENABLE ALWAYS TRIGGER skill_artifacts_append_only;

CREATE OR REPLACE TRIGGER skill_artifacts_no_truncate BEFORE TRUNCATE ON ledger.skill_artifacts FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_artifacts ENABLE ALWAYS TRIGGER skill_artifacts_no_truncate;

CREATE OR REPLACE TRIGGER skill_files_append_only BEFORE DELETE OR UPDATE ON ledger.skill_files FOR EACH ROW EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_files ENABLE ALWAYS TRIGGER skill_files_append_only;

CREATE OR REPLACE TRIGGER skill_files_no_truncate BEFORE TRUNCATE ON ledger.skill_files FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_change();

ALTER TABLE ledger.skill_files ENABLE ALWAYS TRIGGER skill_files_no_truncate;

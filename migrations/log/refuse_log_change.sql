-- Like the events, the log is written once: rows are never changed or
-- removed (a checkpoint's published_at aside, set once).

CREATE OR REPLACE FUNCTION ledger.refuse_log_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'checkpoints' AND OLD.published_at IS NULL
       AND (NEW.size, NEW.root_hash, NEW.origin, NEW.note, NEW.signed_at) = (OLD.size, OLD.root_hash, OLD.origin, OLD.note, OLD.signed_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ledger.%: % is not allowed, the Merkle log is append-only', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

REVOKE ALL ON FUNCTION ledger.refuse_log_change() FROM PUBLIC;

CREATE OR REPLACE TRIGGER checkpoint_cosignatures_append_only BEFORE DELETE OR UPDATE ON ledger.checkpoint_cosignatures FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoint_cosignatures ENABLE ALWAYS TRIGGER checkpoint_cosignatures_append_only;

CREATE OR REPLACE TRIGGER checkpoint_cosignatures_no_truncate BEFORE TRUNCATE ON ledger.checkpoint_cosignatures FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoint_cosignatures ENABLE ALWAYS TRIGGER checkpoint_cosignatures_no_truncate;

CREATE OR REPLACE TRIGGER checkpoints_append_only BEFORE DELETE OR UPDATE ON ledger.checkpoints FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoints ENABLE ALWAYS TRIGGER checkpoints_append_only;

CREATE OR REPLACE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON ledger.checkpoints FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.checkpoints ENABLE ALWAYS TRIGGER checkpoints_no_truncate;

CREATE OR REPLACE TRIGGER log_faults_append_only BEFORE DELETE OR UPDATE ON ledger.log_faults FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_append_only;

CREATE OR REPLACE TRIGGER log_faults_no_truncate BEFORE TRUNCATE ON ledger.log_faults FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_faults ENABLE ALWAYS TRIGGER log_faults_no_truncate;

CREATE OR REPLACE TRIGGER log_leaves_append_only BEFORE DELETE OR UPDATE ON ledger.log_leaves FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_leaves ENABLE ALWAYS TRIGGER log_leaves_append_only;

CREATE OR REPLACE TRIGGER log_leaves_no_truncate BEFORE TRUNCATE ON ledger.log_leaves FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_leaves ENABLE ALWAYS TRIGGER log_leaves_no_truncate;

CREATE OR REPLACE TRIGGER log_nodes_append_only BEFORE DELETE OR UPDATE ON ledger.log_nodes FOR EACH ROW EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_nodes ENABLE ALWAYS TRIGGER log_nodes_append_only;

CREATE OR REPLACE TRIGGER log_nodes_no_truncate BEFORE TRUNCATE ON ledger.log_nodes FOR EACH STATEMENT EXECUTE FUNCTION ledger.refuse_log_change();

ALTER TABLE ledger.log_nodes ENABLE ALWAYS TRIGGER log_nodes_no_truncate;

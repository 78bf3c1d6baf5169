-- From here on the numbered migrations hold only schema: tables, columns,
-- constraints, indexes, data moves and the removal of a definition. Every
-- function, view, row-security policy and trigger of the ledger schema is
-- one file under migrations/<role>/ (docs/migrations.md), which
-- `execledger migrate` applies after the numbered migrations whenever its
-- text changed, or a numbered migration ran, since it was recorded here.
CREATE TABLE public.execledger_definitions (
    name           text PRIMARY KEY,
    sha256         text NOT NULL,
    schema_version integer NOT NULL,
    applied_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE public.execledger_definitions IS
    'The definition files (migrations/<role>/<name>.sql) applied to this database: their SHA-256 and the schema version they were applied at.';

-- Every component checks the schema, and its definitions, before it starts.
GRANT SELECT ON public.execledger_definitions
    TO ledger_submitter, ledger_approver, ledger_executor, ledger_auditor, ledger_admin;

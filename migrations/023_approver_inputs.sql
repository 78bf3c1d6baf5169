-- 023: approvers see what they approve; denials by reason over time;
-- witness lag.
--
-- ledger.awaiting_approval gains the input an approval decides and an
-- optional request id (an approver's `requests show`): a new result and a
-- new signature, which CREATE OR REPLACE cannot make. The file
-- api/awaiting_approval.sql creates the new function.
DROP FUNCTION IF EXISTS ledger.awaiting_approval(integer);

-- Denials per principal and reason in hour and day buckets (UTC), for the
-- console's chart of denials by reason over time; projection quota_usage
-- fills it beside quota_denials (which has no time) and
-- quota_usage_buckets (which has no reason). It starts empty: denials
-- recorded before this migration are counted by a rebuild
-- (execledger projector rebuild quota_usage).
CREATE TABLE ledger.quota_denial_buckets (
    principal    text        NOT NULL,
    bucket       text        NOT NULL,
    bucket_start timestamptz NOT NULL,
    reason       text        NOT NULL, -- the error kind
    denied       bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (principal, bucket, bucket_start, reason),
    CONSTRAINT quota_denial_buckets_bucket_check CHECK (bucket IN ('hour', 'day'))
);
COMMENT ON TABLE ledger.quota_denial_buckets IS 'Denied calls per principal and reason in hour and day buckets (UTC); projection quota_usage.';
-- Every principal's denials of a time range (the chart over all principals).
CREATE INDEX quota_denial_buckets_time_idx ON ledger.quota_denial_buckets (bucket, bucket_start);

ALTER TABLE ledger.quota_denial_buckets ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON ledger.quota_denial_buckets FROM PUBLIC;
GRANT SELECT ON ledger.quota_denial_buckets TO ledger_submitter, ledger_executor, ledger_auditor, ledger_admin, ledger_reader;

UPDATE ledger.projections SET tables = tables || 'quota_denial_buckets'::text
WHERE name = 'quota_usage' AND NOT ('quota_denial_buckets' = ANY (tables));

-- Each witness's newest cosignature, for the console's witness lag: a
-- walk of the distinct witnesses and one probe each, not a scan of every
-- cosignature.
CREATE INDEX checkpoint_cosignatures_key_idx ON ledger.checkpoint_cosignatures (key_name, key_hash, size);

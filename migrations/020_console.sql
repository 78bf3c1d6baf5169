-- The console's request list pages newest first by keyset
-- ((submitted_at, id) < the last row's), over any number of requests: an
-- auditor's unfiltered list walks request_status_submitted_idx backwards;
-- a submitter's list, which row security narrows to its principal, and a
-- list filtered by principal walk request_status_principal_submitted_idx.
-- Neither indexes a column a request's updates change, so the updates of
-- request_status stay HOT.
CREATE INDEX request_status_submitted_idx ON ledger.request_status (submitted_at, id);
CREATE INDEX request_status_principal_submitted_idx ON ledger.request_status (principal, submitted_at, id);

// Package audit owns reading the audit trail (ledger.audit_trail): the
// Filter a reader selects rows with (principal, tool, time range,
// request, decision), the one query it builds, the Row it scans, and
// keyset paging by a stable Cursor, so that the CLI (execledger audit)
// and a web console page through the same rows in the same order.
//
// Rows are read as the caller's login: the table's row security decides
// what the caller sees (auditors and admins every row, a submitter its own
// principal's).
package audit

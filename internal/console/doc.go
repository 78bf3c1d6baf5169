// Package console is Execledger's web console: server-rendered pages for
// the people who read the ledger — requests and their proofs, approvals,
// the audit trail, quotas, skills, the transparency log and health.
//
// A person signs in with their own PostgreSQL login and password. The
// console opens a small pool of connections authenticated as that login
// (never SET ROLE, which would bypass the server's authentication), and
// every page and action runs on it: row security, the principal mapping
// and the ledger_* roles decide what each person sees and may do, and
// every action is the SQL API call the command line makes. With a replica
// URL, each session has a second, read-only pool on the standby, as the
// same login: the pages read there and the actions go to the primary.
// Pages update in place by polling a fragment of themselves (console.js);
// those fetches do not keep an idle session open. Sessions live
// in memory: an HTTP-only, Secure, SameSite=Strict cookie names one; a
// per-session token guards every POST against cross-site forgery; an
// idle session is closed with its pool. Templates and assets are
// embedded; nothing is loaded from elsewhere.
package console

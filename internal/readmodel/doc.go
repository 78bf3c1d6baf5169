// Package readmodel owns what a reader puts together about one request
// from the read models and the log: the request row, its decisions and
// outcome from the audit trail, its sealed event trail (with the events
// the Merkle log passed by set apart), and its newest attestation. The
// reads run as the caller's login, whose roles and row security decide
// what it sees; a login that may not read the log gets the rest and a
// note saying so.
//
// execledger requests show prints a Description; a console can serve it.
package readmodel

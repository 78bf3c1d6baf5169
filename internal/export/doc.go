// Package export is the database side of Execledger's export bundles
// (internal/bundle): it reads the Merkle log, its checkpoints and the
// events they commit to out of PostgreSQL and writes them as a bundle
// (Export), feeds the same records to the bundle verifier without a file
// (VerifyDB, an fsck of the live log from its first leaf, followed by a
// check of the requests read model against the log), and proves single
// events as C2SP tlog-proofs (Prove).
//
// Everything here reads as a ledger_auditor login may: ledger.events, the
// log tables (log_leaves, log_nodes, checkpoints, checkpoint_cosignatures)
// and ledger.requests. It writes nothing.
//
// A bundle is proved against one checkpoint, its newest. Export picks the
// newest published checkpoint that is clean: one below which no request's
// final outcome is sealed without its attestation (requests ended in SQL,
// a cancel or an approver's denial, are attested by an executor a moment
// later, in another transaction, and a bundle cut between the two would
// hold an unattested outcome). See chooser.
package export

// Package bundle writes, reads and verifies Execledger's export bundle: the
// events of the ledger with the Merkle log's signed checkpoints and the
// proofs that tie each event to them, for an auditor to check offline.
//
// A bundle is JSON Lines, format "execledger-bundle" version 1: a header,
// the checkpoints in ascending size with a consistency proof between each
// consecutive pair, range proofs each followed by the events they prove,
// and an end record. docs/bundle.md is the specification of the format,
// of every check and of the fault codes; this package implements it.
//
// Writer writes a bundle record by record. Verifier checks one record by
// record (Feed), which is how a verifier reading the live database uses
// it; Verify reads a bundle file, decoding lines and checking signatures in
// parallel while the tree, stream and request checks run in order. The
// verifier stops at the first fault and reports it as a Fault with a
// stable code (HashMismatch, InclusionFailed, ...) and where it was found.
//
// The verifier trusts only the keys it is given (Keys): the log's note key,
// whose name is the log's origin, the attestation keys and the witness
// keys. The fingerprints in a bundle's header are informative.
package bundle

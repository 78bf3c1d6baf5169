// Package contract is the public contract's vocabulary, written once: the
// request states and error kinds, the event types with each type's stream,
// writer and payload fields, the stream-name forms, and the SQLSTATE
// classes the code reacts to.
//
// It imports nothing of this module, so every package may use it: the
// ledger client, the executor, the projector, the verifiers and the
// commands. The SQL half of the contract (the CHECK constraints of
// ledger.request_status and ledger.queue, the IN-lists of the definitions
// under migrations/, and the payloads the SQL functions write) is checked
// against it by this package's tests (agreement_test.go), which fail when
// either side changes alone.
//
// DESIGN.md's "public contract" is the prose of what is listed here; a
// value added here is added there too.
package contract

// Package replay owns the replay of a recorded tier A call: reading what
// the ledger holds of the request (its input as the tool got it and its
// last attestation), checking that the attestation covers that request,
// refusing what a replay cannot repeat, building tier A's configuration
// for the module that ran, running the call again (internal/sandbox/wasmrun)
// and comparing outcome, output digest and fuel with the attestation.
//
// execledger verify --replay parses the flags, loads the configuration
// and the key, prints the Report and chooses the exit code.
package replay

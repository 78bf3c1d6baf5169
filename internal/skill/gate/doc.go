// Package gate checks an installed skill's trust at every call and runs
// its tools in tier A: it is the executor's Skills (executor.Skills).
//
// In the claim's transaction, for each tool an installed skill serves,
// Resolve reads the skill's state, its artifact and the signing key's
// entry in the trust store, loads the artifact's stored files, hashes them
// into the payload digest and verifies the publisher's signature over it
// with the trusted key. Any of these failing — the skill not enabled, the
// key unknown or revoked, a byte changed in a stored file, a signature
// that does not verify — refuses the call with error_kind
// skill_not_active and the reason. An artifact that passes is vetted
// once per payload digest (manifest, identity, audit; package vet) and its
// tools built once (wazero compiles the modules). The audit is re-run
// here rather than taken from the ledger, so that no single skill admin
// can record a passing audit the modules do not earn: an artifact whose
// audit fails runs only when two principals other than its installer
// approved it (the ledger's two-person rule).
//
// A skill's tool runs with the manifest's quotas within the [wasm]
// limits (the lower of each), the capabilities both its manifest and the
// policy grant, and its input checked against the tool's input schema
// (invalid_input before anything is spent).
//
// Reaudit is serve's scheduled re-audit: every installed skill vetted
// again, failures recorded (which quarantines the skill).
package gate

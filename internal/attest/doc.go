// Package attest builds, signs and verifies execution attestations: DSSE envelopes over in-toto Statement v1.
//
// Execledger signs one attestation for every outcome of a tool request,
// denials included. An attestation is an in-toto Statement v1
// (StatementType) whose predicate is an Execution (PredicateType), serialised
// with encoding/json (struct field order, map keys sorted), wrapped in a DSSE
// envelope with payload type PayloadType and signed with Ed25519 over the DSSE
// pre-authentication encoding (PAE). The statement has two subjects, "input"
// and "output", carrying the SHA-256 of the exact request input and output
// bytes; a request that produced no output (a denial, a spawn failure) has
// the digest of the empty string as its output subject.
//
// What is stored is the envelope's JSON exactly as Signer.Sign returns it,
// and Digest of those bytes ("sha256:<hex>") identifies the attestation: it
// is what a later attestation of the same request records in
// Execution.PreviousDigest, chaining the attempts.
//
// # Keys
//
// Keys are Ed25519. Key files are PEM: a "PRIVATE KEY" block (PKCS #8) with
// mode 0600 and a "PUBLIC KEY" block (PKIX) with mode 0644; LoadSigner
// refuses a private key file that group or others can access. A key id is
// "ed25519:" followed by the first 16 hex digits of the SHA-256 of the raw
// 32-byte public key (PublicKeyID); it is written into every signature's
// keyid and is a hint only: the signature is what is checked.
//
// # Offline verification
//
// An auditor needs only the public key: Verify checks the envelope's payload
// type, that at least one signature whose keyid is the key's id (or empty)
// verifies over PAE(payloadType, payload), and that the payload is a valid
// Statement v1 with PredicateType. Statement.VerifySubjects then checks input
// and output bytes against the subjects. The DSSE envelope format is the one
// of https://github.com/secure-systems-lab/dsse, so any DSSE verifier that
// accepts raw Ed25519 keys can check the signature too.
//
// # Palyra's ToolAttestation
//
// Palyra records an unsigned, unchained ToolAttestation per tool call. Each
// of its fields has a counterpart here (the Palyra field set is a subset of
// ours):
//
//	Palyra ToolAttestation   Execledger
//	attestation_id (ULID)    predicate.attestation_id (caller-chosen, e.g. request id + attempt)
//	execution_sha256         subject[input|output].digest.sha256 for the bytes, and the
//	                         DSSE signature over the whole statement for the other hashed
//	                         fields (proposal_id -> request_id, tool, success, timed_out,
//	                         executor, enforcement, executed_at; error -> error_kind)
//	executed_at_unix_ms      predicate.started_at and predicate.finished_at (RFC 3339, UTC, ns)
//	timed_out                predicate.timed_out
//	executor                 predicate.executor (same labels: "policy", "builtin",
//	                         "sandbox_tier_a", "sandbox_tier_b", "sandbox_tier_c_linux_bubblewrap", ...)
//	sandbox_enforcement      predicate.enforcement
//	success                  predicate.success
//
// Beyond Palyra, an Execution records the principal, run, tier, executor
// host, policy digest, decision and reason, approval, exit status, error
// kind, resource usage and the previous attestation's digest.
package attest

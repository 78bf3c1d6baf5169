package attest_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/execledger/execledger/internal/attest"
)

// A denial is attested like any other outcome; an auditor verifies it with
// the public key alone.
func Example() {
	seed := sha256.Sum256([]byte("example"))
	signer := attest.NewSigner(ed25519.NewKeyFromSeed(seed[:]))

	input := []byte(`{"command":"bash","args":["-c","id"]}`)
	now := time.Date(2026, 3, 14, 14, 0, 0, 0, time.UTC)
	st := attest.NewStatement(input, nil, attest.Execution{
		AttestationID:  "req-1/1",
		RequestID:      "req-1",
		Tool:           "process.run",
		Principal:      "agent:builder",
		Executor:       attest.ExecutorPolicy,
		ExecutorHost:   "execledger-1",
		PolicyDigest:   "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Decision:       attest.DecisionDeny,
		DecisionReason: "policy.deny.interpreter",
		StartedAt:      now,
		FinishedAt:     now,
	})
	_, envelopeJSON, digest, err := signer.Sign(st)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(digest), digest[:7])

	// Offline, with the stored bytes and the public key:
	got, err := attest.Verify(envelopeJSON, signer.PublicKey())
	if err != nil {
		panic(err)
	}
	if err := got.VerifySubjects(input, nil); err != nil {
		panic(err)
	}
	fmt.Println(got.Predicate.Decision, got.Predicate.DecisionReason, got.Predicate.Executor)
	// Output:
	// 71 sha256:
	// deny policy.deny.interpreter policy
}

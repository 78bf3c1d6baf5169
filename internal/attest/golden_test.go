package attest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/execledger/execledger/internal/golden"
)

// predicateFields are the predicate's JSON names, listed independently of
// the golden files so that an -update cannot silently rename a field.
var predicateFields = []string{
	"attestation_id", "request_id", "tool", "principal", "run_id", "tier", "executor", "executor_host",
	"enforcement", "policy_digest", "decision", "decision_reason", "approval_ref", "started_at", "finished_at",
	"timed_out", "success", "exit_status", "error_kind", "resources", "previous_attestation_digest",
}

// deniedOmits are the omitempty fields a denial leaves out.
var deniedOmits = []string{"run_id", "tier", "enforcement", "approval_ref", "exit_status", "error_kind", "resources", "previous_attestation_digest"}

func TestStatementGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		st     Statement
		fields []string
	}{
		{"statement_allow.golden.json", NewStatement(testInput, testOutput, timedOut(allowedExecution())), predicateFields},
		{"statement_deny.golden.json", NewStatement(testInput, nil, deniedExecution()), without(predicateFields, deniedOmits)},
	} {
		t.Run(c.golden, func(t *testing.T) {
			b, err := json.MarshalIndent(c.st, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, c.golden, append(b, '\n'))

			var top map[string]json.RawMessage
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			assertKeys(t, "statement", top, []string{"_type", "subject", "predicateType", "predicate"})
			var pred map[string]json.RawMessage
			if err := json.Unmarshal(top["predicate"], &pred); err != nil {
				t.Fatal(err)
			}
			assertKeys(t, "predicate", pred, c.fields)
		})
	}
}

// timedOut turns e into a run killed at its timeout, which sets error_kind,
// the one optional field allowedExecution leaves empty, so that the golden
// file shows every field.
func timedOut(e Execution) Execution {
	exit := 137
	e.TimedOut, e.Success, e.ExitStatus, e.ErrorKind = true, false, &exit, "TimedOut"
	return e
}

func without(all, drop []string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(s string) bool { return slices.Contains(drop, s) })
}

func assertKeys[V any](t *testing.T, what string, m map[string]V, want []string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s JSON fields:\n got %q\nwant %q", what, got, want)
	}
}

// TestEnvelopeGolden pins the stored bytes: the statement encoding, the
// envelope encoding and the signature (Ed25519 is deterministic). The
// golden envelope must keep verifying, so old attestations stay checkable.
func TestEnvelopeGolden(t *testing.T) {
	s := NewSigner(testKey("a"))
	_, envJSON, digest, err := s.Sign(NewStatement(testInput, testOutput, allowedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "envelope.golden.json", envJSON)
	golden.Compare(t, "envelope.golden.digest", []byte(digest+"\n"))

	stored, err := os.ReadFile(filepath.Join("testdata", "envelope.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Verify(stored, s.PublicKey())
	if err != nil {
		t.Fatalf("golden envelope does not verify: %v", err)
	}
	if err := st.VerifySubjects(testInput, testOutput); err != nil {
		t.Fatal(err)
	}
}

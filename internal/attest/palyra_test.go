package attest

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// palyraToolAttestation is Palyra's ToolAttestation (see
// shared/reference/palyra.md, Tool gate), plus success, which Palyra hashes
// into execution_sha256 and reports alongside.
type palyraToolAttestation struct {
	AttestationID      string `json:"attestation_id"`
	ExecutionSHA256    string `json:"execution_sha256"`
	ExecutedAtUnixMs   int64  `json:"executed_at_unix_ms"`
	TimedOut           bool   `json:"timed_out"`
	Executor           string `json:"executor"`
	SandboxEnforcement string `json:"sandbox_enforcement"`
	Success            bool   `json:"success"`
}

// palyraMapping maps each Palyra field to the JSON paths of a signed
// statement that carry it (the package doc has the same table).
var palyraMapping = map[string][]string{
	"attestation_id":      {"predicate.attestation_id"},
	"execution_sha256":    {"subject.input.sha256", "subject.output.sha256"},
	"executed_at_unix_ms": {"predicate.started_at", "predicate.finished_at"},
	"timed_out":           {"predicate.timed_out"},
	"executor":            {"predicate.executor"},
	"sandbox_enforcement": {"predicate.enforcement"},
	"success":             {"predicate.success"},
}

func TestPalyraFieldsMapOntoOurs(t *testing.T) {
	// Every Palyra field is in the mapping.
	b, err := json.Marshal(palyraToolAttestation{})
	if err != nil {
		t.Fatal(err)
	}
	var palyra map[string]any
	if err := json.Unmarshal(b, &palyra); err != nil {
		t.Fatal(err)
	}
	assertKeys(t, "Palyra ToolAttestation", palyra, keys(palyraMapping))

	// Every mapped path exists in a signed and verified attestation.
	s := NewSigner(testKey("a"))
	_, envJSON, _, err := s.Sign(NewStatement(testInput, testOutput, allowedExecution()))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Verify(envJSON, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	doc := statementPaths(t, st)
	for field, paths := range palyraMapping {
		for _, p := range paths {
			if _, ok := doc[p]; !ok {
				t.Errorf("Palyra %s maps to %s, which the statement lacks", field, p)
			}
		}
	}

	// The package doc's table has a row per field naming where it went.
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for field, paths := range palyraMapping {
		for _, p := range paths {
			target := p[strings.LastIndexByte(p, '.'):] // ".enforcement"
			if !slices.ContainsFunc(lines, func(line string) bool {
				rest, ok := strings.CutPrefix(line, "//\t"+field+" ")
				return ok && strings.Contains(rest, target)
			}) {
				t.Errorf("doc.go has no table row mapping Palyra's %s to %s", field, target)
			}
		}
	}
}

// TestPalyraValuesSurvive converts a Palyra attestation's values to an
// Execution and checks that signing and verifying keeps each of them.
func TestPalyraValuesSurvive(t *testing.T) {
	p := palyraToolAttestation{
		AttestationID:      "01J9Z3ABCDEFGHJKMNPQRSTVWX",
		ExecutedAtUnixMs:   1773497366535,
		TimedOut:           true,
		Executor:           "sandbox_tier_b",
		SandboxEnforcement: "wasm_fuel",
		Success:            false,
	}
	e := allowedExecution()
	e.AttestationID = p.AttestationID
	e.StartedAt = time.UnixMilli(p.ExecutedAtUnixMs)
	e.FinishedAt = e.StartedAt.Add(30 * time.Second)
	e.TimedOut, e.Executor, e.Success = p.TimedOut, p.Executor, p.Success
	e.Enforcement = map[string]any{"sandbox": p.SandboxEnforcement}

	s := NewSigner(testKey("a"))
	_, envJSON, _, err := s.Sign(NewStatement(testInput, testOutput, e))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Verify(envJSON, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	enforcement, _ := st.Predicate.Enforcement["sandbox"].(string)
	got := palyraToolAttestation{
		AttestationID:      st.Predicate.AttestationID,
		ExecutedAtUnixMs:   st.Predicate.StartedAt.UnixMilli(),
		TimedOut:           st.Predicate.TimedOut,
		Executor:           st.Predicate.Executor,
		SandboxEnforcement: enforcement,
		Success:            st.Predicate.Success,
	}
	if got != p {
		t.Errorf("Palyra view of the verified statement:\n got %+v\nwant %+v", got, p)
	}
	// execution_sha256 covers input and output; so do the subjects.
	if err := st.VerifySubjects(testInput, testOutput); err != nil {
		t.Error(err)
	}
	if err := st.VerifySubjects(testInput, []byte("other output")); err == nil {
		t.Error("another output passed VerifySubjects")
	}
}

// statementPaths flattens st's JSON to dotted paths, subjects keyed by name.
func statementPaths(t *testing.T, st *Statement) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	paths := map[string]any{}
	for k, v := range m["predicate"].(map[string]any) {
		paths["predicate."+k] = v
	}
	for _, s := range st.Subject {
		for alg, d := range s.Digest {
			paths["subject."+s.Name+"."+alg] = d
		}
	}
	return paths
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
